"""Re-record the example generations: `python -m tests.generator.record_examples [TASK_ID...]`.

Each example task `tasks/<id>/` has the scripted "model" replies under
`tests/fixtures/generator/examples/<id>/replies/` (drafts, repairs, reflections, extractions
and verdicts, all written by hand: no model was called). This runs the pipeline with that
scripted model through a response cache, exports every exchange to `recordings/<id>/` with a
`PROVENANCE.txt` saying they are authored fixtures, then runs exactly what the README runs,
`judgegen generate <id> --provider replay:recordings/<id> --pages pages --cache-mode off
--no-commit` (pages imported from `examples/pages/`), so the
committed judge and review record are what a replay reproduces. It also scores the sample
answers with the new judge (`judgegen run`, pages imported from `examples/pages/`, verdicts
from `replies/verdicts.json`) so the README's `judgegen run` replays offline too, and approves
the example judges (so the runner's review gate lets them run and later generations see them
as reviewed examples). Run it after changing the
prompts, the API reference or the mistakes catalog (the recorded requests embed them).

One scripted model answers the generation and the run, under one provider name (`EXAMPLE_PROVIDER`, the name a
cache key holds): the run's requests that the generation already made are cache hits, so each
exchange is recorded, and exported, once. Each record says it came from that scripted policy
(its `origin`), so `cache import` and the `LLM:` line name it a fixture, never a model's
answer; and its `latency_s` is 0.0, since no model took any time to give it (the policy's own
run time would change every file at every re-recording).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from generator.stages.pipeline import generate
from generator.stages.run import PipelineOptions
from generator.stages.spec import load_spec
from toolkit.llm.cache import ResponseCache
from toolkit.llm.cache_mode import CacheMode
from toolkit.llm.client import LLMClient, build_provider
from toolkit.llm.records import CacheRecord, load_record_files, record_json
from toolkit.llm.settings import DEFAULT_GENERATION_MODEL, DEFAULT_JUDGE_MODEL, LLMSettings
from toolkit.runner.approval import approval_problem, approve

ROOT = Path(__file__).resolve().parents[2]
REPLIES = ROOT / "tests" / "fixtures" / "generator" / "examples"
RECORDINGS = ROOT / "recordings"
PROVENANCE = (
    "authored fixture, no model called\n\n"
    "Every response in this folder was written by hand "
    "(tests/fixtures/generator/examples/<task>/replies/) and recorded by "
    "tests/generator/record_examples.py; no language model produced any of them. Costs shown "
    "when replaying them are estimates of what the same calls would cost live.\n"
)
EXAMPLE_REVIEWER = "judgegen maintainers (example judges, reviewed with their recordings)"
APPROVED_AT = datetime(2026, 11, 29, tzinfo=UTC)
EXAMPLE_PROVIDER = "scripted:tests.generator.scripted_generation:example_run_policy"
"""The scripted model of the generation and of the run: one name, so they share cache entries."""


def example_ids() -> list[str]:
    """Every example task that has scripted replies."""
    return sorted(p.name for p in REPLIES.iterdir() if (p / "replies").is_dir())


async def record_generation(task_id: str, cache_path: Path, scratch: Path) -> None:
    """Run the scripted generation through the cache; the judge lands in `scratch`.

    Acceptance and mutation read the example pages from `scratch/pages`.
    """
    task_dir = ROOT / "tasks" / task_id
    cache = ResponseCache(cache_path)
    provider = build_provider(EXAMPLE_PROVIDER, LLMSettings())  # as `judgegen run` builds it
    clients = [
        LLMClient(provider, cache=cache, cache_mode=CacheMode.RW, model=model)
        for model in (DEFAULT_GENERATION_MODEL, DEFAULT_JUDGE_MODEL)
    ]
    options = PipelineOptions(
        model=DEFAULT_GENERATION_MODEL,
        extract_model=DEFAULT_JUDGE_MODEL,
        repo=scratch,
        commit=False,
        pages=scratch / "pages",
    )
    await generate(load_spec(task_dir), clients[0], clients[1], options)
    cache.close()


def cli(*args: str | Path) -> None:
    """Run a `judgegen` command in the repository root."""
    command = [sys.executable, "-c", "from generator.cli import main; main()"]
    subprocess.run([*command, *map(str, args)], cwd=ROOT, check=True)


def import_pages(store: Path) -> None:
    """The example answers' cited pages, imported into a page store at `store`."""
    cli("cache-pages", "--import-m2w2", "examples/pages", "--store", store)


def record_run(task_id: str, cache_path: Path, scratch: Path) -> None:
    """Score the sample answers with the new judge, as the README does, through the cache."""
    cli(
        "run",
        "--answers",
        f"tasks/{task_id}/samples",
        "--pages",
        scratch / "pages",
        "--judges",
        scratch / "generated_judges",
        "--results",
        scratch / "results",
        "--reviews",
        scratch / "reviews",
        "--include-unreviewed",
        "--provider",
        EXAMPLE_PROVIDER,
        "--cache-mode",
        "rw",
        "--cache-path",
        cache_path,
    )


def export(task_id: str, cache_path: Path, target: Path | None = None) -> int:
    """Replace `recordings/<task_id>/` (or `target`) with every exchange in the cache, as
    fixtures (`as_fixture`); returns how many. An entry it cannot read stops the recording:
    the folder would lack its answer."""
    target = target or RECORDINGS / task_id
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.json"):
        old.unlink()
    cache = ResponseCache(cache_path)
    try:
        count, skipped = cache.export_dir(target)
    finally:
        cache.close()
    if skipped:
        raise SystemExit(f"{task_id}: {skipped} cache entries could not be read for export")
    for path, record in load_record_files(target):
        path.write_text(record_json(as_fixture(record)), "utf-8")
    (target / "PROVENANCE.txt").write_text(PROVENANCE, "utf-8")
    return count


def as_fixture(record: CacheRecord) -> CacheRecord:
    """`record` with no timing: a scripted reply took no model any time (`latency_s` 0.0).
    One that does not say it came from the scripted policy stops the recording."""
    if record.origin is None or record.origin.source != "scripted":
        raise SystemExit(f"{record.file_name()} does not say it is a scripted fixture")
    response = record.response.model_copy(update={"latency_s": 0.0})
    return record.model_copy(update={"response": response})


def replay(task_id: str, pages: Path) -> None:
    """Generate the committed judge and review record from the recordings, as the README does."""
    cli(
        "generate",
        task_id,
        "--provider",
        f"replay:recordings/{task_id}",
        "--pages",
        pages,
        "--cache-mode",
        "off",
        "--no-commit",
    )


def seed_context(scratch: Path) -> None:
    """Give the scratch generation the repository's judges and approvals (its examples)."""
    shutil.copytree(ROOT / "generated_judges", scratch / "generated_judges")
    (scratch / "reviews").mkdir()
    for approval in (ROOT / "reviews").glob("*.approval.json"):
        shutil.copy(approval, scratch / "reviews")


def record_all(task_ids: list[str]) -> None:
    """Record, export and replay each task, in order."""
    for task_id in task_ids:
        with tempfile.TemporaryDirectory() as tmp:
            scratch, cache_path = Path(tmp), Path(tmp) / "cache.sqlite"
            seed_context(scratch)
            import_pages(scratch / "pages")
            asyncio.run(record_generation(task_id, cache_path, scratch))
            record_run(task_id, cache_path, scratch)
            count = export(task_id, cache_path)
            print(f"{task_id}: {count} recordings", file=sys.stderr)
            replay(task_id, scratch / "pages")


def approve_all(task_ids: list[str]) -> None:
    """Approve example judges whose approval is missing or stale (a valid one is kept)."""
    judges, reviews = Path("generated_judges"), Path("reviews")
    for task_id in task_ids:
        if approval_problem(judges / f"{task_id}.py", reviews, task_id) is None:
            continue
        approve(
            task_id,
            reviewer=EXAMPLE_REVIEWER,
            judges_dir=judges,
            reviews_dir=reviews,
            now=APPROVED_AT,
        )


def main(task_ids: list[str]) -> None:
    """Record twice: the judges first, then with the other approved examples in the context.

    A judge's bytes do not depend on the examples its prompt showed, so the second pass keeps
    the approvals valid; it makes each generation see what a replay in this repository sees.
    """
    os.chdir(ROOT)
    ids = task_ids or example_ids()
    record_all(ids)
    approve_all(ids)
    record_all(ids)
    stale = [
        t
        for t in ids
        if approval_problem(ROOT / "generated_judges" / f"{t}.py", ROOT / "reviews", t)
    ]
    if stale:
        raise SystemExit(f"approvals went stale for {stale}: the judges changed in the second pass")


if __name__ == "__main__":
    main(sys.argv[1:])
