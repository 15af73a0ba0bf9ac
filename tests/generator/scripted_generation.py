"""A scripted generation model for tests: replies come from hand-authored files in a fixture folder.

No model wrote these replies. `replies/<label>.md` answers the draft, repair and reflection
requests (labels `draft`, `repair_1`, `reflect_1`, …; a reflection is a ```json findings block
plus an optional ```python module), `replies/extract.json` maps each sample answer's name (and
`answer~kind` for each mutation or meaning-preserving rewrite the mutation stage runs: the
values as that text writes them) to what extraction returns for it (or to a mapping of
template class name → result, for judges that extract more than once), and `replies/verdicts.json` lists the verification verdicts (claim +
source → verdict) that the acceptance and mutation stages ask for. A request with no fixture is
an error, so a fixture never guesses.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from generator.review.mutate import mutate_all, rewrite_all
from generator.stages.spec import load_spec
from toolkit.llm.models import LLMRequest, LLMResponse, Usage
from toolkit.llm.scripted import response_from

FIXED_USAGE = {
    "draft": Usage(input_tokens=4000, output_tokens=600),
    "repair": Usage(input_tokens=4500, output_tokens=600),
    "reflect": Usage(input_tokens=5000, output_tokens=900, cache_read_tokens=3000),
    "extract": Usage(input_tokens=400, output_tokens=40),
}


class FixturePolicy:
    """Answers generation and extraction requests from a task's fixture replies."""

    def __init__(
        self, task_dir: Path, replies: Path | None = None, fixed_usage: bool = True
    ) -> None:
        self.replies = replies or task_dir / "replies"
        self.fixed_usage = fixed_usage
        self.answers = {a.name: a.text for a in load_spec(task_dir).answers}
        for answer in load_spec(task_dir).answers:
            for mutation in [*mutate_all(answer.text), *rewrite_all(answer.text)]:
                self.answers[f"{answer.name}~{mutation.name}"] = mutation.text
        self.extractions = json.loads((self.replies / "extract.json").read_text())

    def __call__(self, request: LLMRequest) -> LLMResponse:
        """The reply, with fixed token counts per purpose so costs are reproducible."""
        response = response_from(self.reply(request), request)
        if not self.fixed_usage:
            return response
        usage = FIXED_USAGE.get(request.metadata.purpose, response.usage)
        return response.model_copy(update={"usage": usage})

    def reply(self, request: LLMRequest) -> str | dict:
        """The fixture reply for `request`."""
        label = request.metadata.label or ""
        if request.metadata.purpose == "extract":
            entry = self.extractions[self.answer_name(request)]
            return entry.get(request.schema_name or "", entry)
        if request.metadata.purpose == "verify":
            return self.verdict(request)
        return (self.replies / f"{label}.md").read_text()

    def answer_name(self, request: LLMRequest) -> str:
        """The sample answer (or `answer~mutation`, `answer~rewrite`) whose text the extraction
        prompt holds."""
        prompt = request.prompt_text()
        found = [n for n, text in self.answers.items() if text.strip() in prompt]
        if not found:
            raise KeyError("the extraction prompt holds no known sample answer or mutation")
        return max(found, key=lambda n: len(self.answers[n]))

    def verdict(self, request: LLMRequest) -> dict:
        """The authored verdict whose claim (and source, when given) the request mentions."""
        prompt = request.prompt_text()
        path = self.replies / "verdicts.json"
        entries = json.loads(path.read_text()) if path.is_file() else []
        for entry in entries:
            if entry["claim"] in prompt and (entry.get("source") or "") in prompt:
                return {"reasoning": entry["reasoning"], "result": entry["passed"]}
        raise KeyError(f"no authored verdict in {path} for this verification:\n{prompt[-1500:]}")


RIVER_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "generator" / "river_lengths"


def river_policy(request: LLMRequest) -> LLMResponse:
    """`--provider scripted:tests.generator.scripted_generation:river_policy` for CLI tests."""
    return FixturePolicy(RIVER_FIXTURE)(request)


ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_REPLIES = ROOT / "tests" / "fixtures" / "generator" / "examples"


def example_run_policy(request: LLMRequest) -> LLMResponse:
    """The scripted model of the examples' recordings, their generation and `judgegen run`
    (authored replies and verdicts; `record_examples.EXAMPLE_PROVIDER`)."""
    task_id = request.metadata.task_id or ""
    replies = EXAMPLE_REPLIES / task_id / "replies"
    return FixturePolicy(ROOT / "tasks" / task_id, replies, fixed_usage=False)(request)


WALKTHROUGH = ROOT / "tests" / "fixtures" / "generator" / "walkthrough"


def walkthrough_policy(request: LLMRequest) -> LLMResponse:
    """The README's `judgegen regenerate` walkthrough: authored replies to the edited example."""
    task_id = request.metadata.task_id or ""
    return FixturePolicy(ROOT / "tasks" / task_id, WALKTHROUGH / task_id / "replies")(request)


BRITTLE_MUTANTS = ROOT / "tests" / "fixtures" / "generator" / "brittle_mutants"


def brittle_mutants_policy(request: LLMRequest) -> LLMResponse:
    """The example task generated as a judge that crashes on most mutations of its good answer
    (`tests/fixtures/generator/brittle_mutants/README.md`)."""
    task_id = request.metadata.task_id or ""
    return FixturePolicy(ROOT / "tasks" / task_id, BRITTLE_MUTANTS / task_id / "replies")(request)


async def extractions_ignore_a_cancellation(request: LLMRequest) -> LLMResponse:
    """`example_run_policy`, but an extraction goes on when first cancelled and ends when
    cancelled again (as a provider ignoring the cancellation does: the close of its client
    waits for it in vain, and `asyncio.run`'s end cancels it again)
    (`scripted:tests.generator.scripted_generation:extractions_ignore_a_cancellation`): the
    debug stage's judges time out with their extraction out, and its row comes only as the
    command's event loop ends."""
    if request.metadata.purpose == "extract":
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.Event().wait()
    return example_run_policy(request)


async def extractions_never_answered(request: LLMRequest) -> LLMResponse:
    """`example_run_policy`, but an extraction ends only when cancelled
    (`scripted:tests.generator.scripted_generation:extractions_never_answered`): the debug
    stage's judges time out with their extraction out, and the client's close cancels it and
    writes its row (error `abandoned`)."""
    if request.metadata.purpose == "extract":
        await asyncio.Event().wait()
    return example_run_policy(request)
