"""The context a generation prompt is built from: spec, API reference, mistakes catalog, examples.

Invariant: the stable prefix (`system_block`) depends only on the toolkit and the prompts, never
on the task, so it is byte-identical across every call of every generation and providers can
cache it. Example judges are chosen deterministically: the ones sharing the most traits with
the new spec (per-item lists, official-domain checks, dates, numbers, sequential gates), ties
broken by wording overlap, then reviewed before bundled, then task id.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from generator.stages.apiref import render_api_reference
from generator.stages.lint import render_catalog_markdown
from generator.stages.provenance import strip_header
from generator.stages.spec import LoadedSpec
from prompts import render
from toolkit.llm.models import SystemBlock
from toolkit.runner.approval import approval_problem

BUNDLED_EXAMPLES = Path(__file__).resolve().parent / "examples"
DEFAULT_MAX_EXAMPLES = 2


class JudgeExample(BaseModel):
    """A judge shown to the model as an example of the house style."""

    task_id: str
    origin: str  # "reviewed" (approved in this repo) | "bundled" (shipped with judgegen)
    source: str


class GenerationContext(BaseModel):
    """Everything the draft, repair and reflect prompts are rendered from."""

    loaded: LoadedSpec
    api_reference: str
    mistakes_catalog: str
    examples: list[JudgeExample]

    def system_block(self) -> SystemBlock:
        """The cacheable stable prefix: instructions, API reference and mistakes catalog."""
        text = render(
            "generator/system.j2",
            api_reference=self.api_reference.rstrip(),
            mistakes_catalog=self.mistakes_catalog.rstrip(),
        )
        return SystemBlock(text=text, cache=True)


def api_reference() -> str:
    """The toolkit API reference, generated from the toolkit's signatures and docstrings."""
    return render_api_reference()


def mistakes_catalog() -> str:
    """The catalog of common judge mistakes, one per lint rule."""
    return render_catalog_markdown()


def _is_approved(judge: Path, reviews_dir: Path, task_id: str) -> bool:
    return approval_problem(judge, reviews_dir, task_id) is None


def reviewed_examples(judges_dir: Path, reviews_dir: Path, exclude: str) -> list[JudgeExample]:
    """Judges in `judges_dir` whose current bytes carry an approval, sorted by task id."""
    found = []
    for judge in sorted(judges_dir.glob("*.py")):
        if judge.stem != exclude and _is_approved(judge, reviews_dir, judge.stem):
            source = strip_header(judge.read_text("utf-8"))
            found.append(JudgeExample(task_id=judge.stem, origin="reviewed", source=source))
    return found


def bundled_examples() -> list[JudgeExample]:
    """The example judges shipped with judgegen (`generator/stages/examples/*.py.txt`)."""
    return [
        JudgeExample(
            task_id=path.name.removesuffix(".py.txt"),
            origin="bundled",
            source=path.read_text("utf-8"),
        )
        for path in sorted(BUNDLED_EXAMPLES.glob("*.py.txt"))
    ]


# Traits a task can have: (how the spec says it, how a judge does it).
TRAITS: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "per_item": (
        re.compile(r"\b(each|every|list|items?|two|three|all)\b", re.I),
        re.compile(r"\bfor \w+.* in |list\["),
    ),
    "official_domain": (
        re.compile(r"\b(official|domain)\b|\w\.(org|com|gov)\b", re.I),
        re.compile(r"url_in_domain|url_domain|_DOMAIN|domain"),
    ),
    "dates": (re.compile(r"\bdates?\b|\bwhen\b", re.I), re.compile(r"same_date|parse_date")),
    "numbers": (
        re.compile(r"\b(how many|number|count|length|days?|km|percent)\b", re.I),
        re.compile(r"same_number|number_in_range|number_bounds|parse_number"),
    ),
    "sequential": (
        re.compile(r"\b(sequential|first|before|order|then)\b", re.I),
        re.compile(r"add_sequential|ROOT_STRATEGY = .sequential"),
    ),
}
_WORD = re.compile(r"[a-z]{4,}")


def _traits(text: str, side: int) -> set[str]:
    return {name for name, patterns in TRAITS.items() if patterns[side].search(text)}


def similarity(spec_text: str, example: JudgeExample) -> tuple[int, float]:
    """(shared traits, word overlap) between a spec's text and an example judge."""
    shared = len(_traits(spec_text, 0) & _traits(example.source, 1))
    words_a = set(_WORD.findall(spec_text.lower()))
    words_b = set(_WORD.findall(example.source.lower()))
    overlap = len(words_a & words_b) / len(words_a | words_b) if words_a | words_b else 0.0
    return shared, round(overlap, 6)


def choose_examples(
    judges_dir: Path,
    reviews_dir: Path,
    task_id: str,
    limit: int = DEFAULT_MAX_EXAMPLES,
    spec_text: str = "",
) -> list[JudgeExample]:
    """Up to `limit` (1 to 3) examples, the most similar to `spec_text` first.

    Without a spec text (or on ties) reviewed judges come before bundled ones, by task id.
    """
    limit = max(1, min(3, limit))
    candidates = reviewed_examples(judges_dir, reviews_dir, task_id) + bundled_examples()
    if spec_text:
        ranked = sorted(
            enumerate(candidates),
            key=lambda pair: (*(-x for x in similarity(spec_text, pair[1])), pair[0]),
        )
        candidates = [example for _, example in ranked]
    return candidates[:limit]


def build_context(
    loaded: LoadedSpec,
    *,
    judges_dir: str | Path = "generated_judges",
    reviews_dir: str | Path = "reviews",
    max_examples: int = DEFAULT_MAX_EXAMPLES,
) -> GenerationContext:
    """Assemble the generation context for one task."""
    return GenerationContext(
        loaded=loaded,
        api_reference=api_reference(),
        mistakes_catalog=mistakes_catalog(),
        examples=choose_examples(
            Path(judges_dir),
            Path(reviews_dir),
            loaded.task_id,
            max_examples,
            spec_text="\n".join(
                (loaded.spec.description, loaded.spec.rubric_guidance, loaded.spec.notes)
            ),
        ),
    )
