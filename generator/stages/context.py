"""The context a generation prompt is built from: spec, API reference, mistakes catalog, examples.

Invariant: the stable prefix (`system_block`) depends only on the toolkit and the prompts, never
on the task, so it is byte-identical across every call of every generation and providers can
cache it. Example judges are chosen deterministically (sorted by task id).
"""

from __future__ import annotations

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


def choose_examples(
    judges_dir: Path, reviews_dir: Path, task_id: str, limit: int = DEFAULT_MAX_EXAMPLES
) -> list[JudgeExample]:
    """Up to `limit` (1 to 3) examples: reviewed judges first, then bundled ones."""
    limit = max(1, min(3, limit))
    candidates = reviewed_examples(judges_dir, reviews_dir, task_id) + bundled_examples()
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
        examples=choose_examples(Path(judges_dir), Path(reviews_dir), loaded.task_id, max_examples),
    )
