"""A scripted generation model for tests: replies come from files in a fixture folder.

`replies/<label>.md` answers the draft and repair requests (labels `draft`, `repair_1`, …),
`replies/<label>.json` the reflections, and `replies/extract.json` maps each sample answer's
name to what extraction returns for it (or to a mapping of template class name → result, for
judges that extract more than once).
"""

from __future__ import annotations

import json
from pathlib import Path

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
            prompt = request.prompt_text()
            name = next(n for n, text in self.answers.items() if text.strip() in prompt)
            entry = self.extractions[name]
            return entry.get(request.schema_name or "", entry)
        if request.metadata.purpose == "reflect":
            return json.loads((self.replies / f"{label}.json").read_text())
        return (self.replies / f"{label}.md").read_text()


RIVER_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "generator" / "river_lengths"


def river_policy(request: LLMRequest) -> LLMResponse:
    """`--provider scripted:tests.generator.scripted_generation:river_policy` for CLI tests."""
    return FixturePolicy(RIVER_FIXTURE)(request)


ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_REPLIES = ROOT / "tests" / "fixtures" / "generator" / "examples"


def example_run_policy(request: LLMRequest) -> LLMResponse:
    """The scripted judging model of the examples' `judgegen run` recordings.

    Verifications are answered from `replies/verdicts.json` (claim + source → verdict);
    a verification with no entry is an error, so a recording never guesses.
    """
    task_id = request.metadata.task_id or ""
    replies = EXAMPLE_REPLIES / task_id / "replies"
    if request.metadata.purpose != "verify":
        return FixturePolicy(ROOT / "tasks" / task_id, replies, fixed_usage=False)(request)
    prompt = request.prompt_text()
    for entry in json.loads((replies / "verdicts.json").read_text()):
        if entry["claim"] in prompt and entry["source"] in prompt:
            value = {"reasoning": entry["reasoning"], "result": entry["passed"]}
            return response_from(value, request)
    raise KeyError(f"no scripted verdict for this verification:\n{prompt[-1500:]}")
