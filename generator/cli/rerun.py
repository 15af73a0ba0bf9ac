"""What rerunning a command that an infrastructure failure stopped keeps, redoes and pays again.

The LLM layer's stop messages (`toolkit.llm`: a provider down, a refused key, endpoint, model
or parameter, the budget) name the cause and what to check, alike for every command; what a
rerun then does differs by command (`run` keeps its finished results, `generate` starts the
stopped task again, `validate` keeps nothing), so each command says it where it reports the
stop, from here and nowhere else. Every command calling the LLM (`@llm_options`) has an entry.
"""

from __future__ import annotations

from toolkit.errors import CacheError
from toolkit.llm.cache_mode import CacheMode

AFTER_STOP: dict[str, str] = {
    "run": "results complete and up to date are kept, and only the evaluations left "
    "incomplete or not started are judged again",
    "generate": "a task's judge is written only once it is published, so the stopped task "
    "starts again from its draft (name only the tasks not published yet, or the others are "
    "generated again too)",
    "regenerate": "a judge, its review and its approval change only when its task is "
    "published, so the stopped task's are as they were and it starts again; the tasks "
    "published before the stop are up to date now and skipped (unless --force)",
    "validate": "it writes nothing, so every labelled answer is judged again",
    "mutate": "it records nothing before the end (nor in the review, with --write-review), so "
    "every mutation runs again",
    "tree": "the all-pass run starts again",
    "diff": "both all-pass runs start again",
    "check": "lint and the debug runs start again",
}
"""What a rerun of each command keeps and redoes after a stop."""

CACHED: dict[CacheMode, str] = {
    CacheMode.RW: "the LLM answers received before the stop come from the response cache, "
    "paid for once",
    CacheMode.RO: "with --cache-mode ro none of the LLM answers received was stored, so those "
    "calls are made and paid for again",
    CacheMode.OFF: "with --cache-mode off every LLM call is made and paid for again",
    CacheMode.REFRESH: "with --cache-mode refresh every LLM call is made and paid for again "
    "(--cache-mode rw would serve the answers it stored)",
    CacheMode.STRICT: "with --cache-mode strict answers come from the response cache alone",
}
"""What a rerun pays for again, by the cache mode of the command's LLM client."""


def rerun_note(command: str, cache_mode: CacheMode | None, *, overwrite: bool = False) -> str:
    """The sentence a stopped `command` ends its report with: what its rerun keeps, redoes
    and pays for again with its LLM client's `cache_mode` (None: it called the LLM through
    no client of judgegen's, e.g. a --backend factory's). `overwrite`: `run --overwrite`,
    whose rerun would redo every result again."""
    rerun = f"Rerun `judgegen {command}`"
    if overwrite:
        rerun += " without --overwrite (with it, every result is redone again)"
    parts = [AFTER_STOP[command]]
    if cache_mode is not None:
        parts.append(CACHED[cache_mode])
    return f"{rerun}: {'; '.join(parts)}."


def cache_after(stop: BaseException | str, cache_mode: CacheMode | None) -> CacheMode | None:
    """The cache mode a rerun note may speak of after `stop` (an error, or a run's stop
    reason, `"<type>: <message>"`): None when the stop is the response cache's own failure,
    whose fix (another cache, or none) decides what a rerun gets from it."""
    name = CacheError.__name__
    own = isinstance(stop, CacheError) or str(stop).startswith(f"{name}:")
    return None if own else cache_mode
