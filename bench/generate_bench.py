"""Generation bench: non-LLM time (target ≤ 5 s), LLM calls and tokens of one generation.

One generation of an example task with a scripted model that answers instantly: the draft is
already the final judge, so the time is lint, debug (3 sample answers × 4 verdict patterns plus
the all-pass rerun, in the sandbox), acceptance (3 answers, real backend code, instant
verdicts, the example pages), mutation testing, two reflection passes (the first revises a
comment, which is re-checked and kept; the second changes nothing) and publish (files + a
commit with git plumbing). Prints the best of `--repeat` runs, the LLM calls and tokens of
that generation by purpose, and the reflection input tokens of each pass (they must not grow).
With `--baseline REV`, also prints the example generations' calls and tokens from the review
records at git revision REV next to the current ones (replayed authored fixtures).

    python bench/generate_bench.py [--task rust_2024_edition] [--repeat 3] [--local]
        [--baseline e77570c]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from generator.review.mutate import mutate_all, rewrite_all
from generator.stages.debug import debug_stage
from generator.stages.lint import lint_source
from generator.stages.pipeline import generate
from generator.stages.reflect import load_checklist
from generator.stages.run import PipelineOptions
from generator.stages.spec import load_spec
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest
from toolkit.llm.scripted import ScriptedProvider
from toolkit.runner.builder import Isolation

ROOT = Path(__file__).resolve().parents[1]
REPLIES = ROOT / "tests" / "fixtures" / "generator" / "examples"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


class InstantModel:
    """Draft = the published judge; verdicts pass; reflection revises a comment, then stops."""

    def __init__(self, task_id: str) -> None:
        self.judge = (ROOT / "generated_judges" / f"{task_id}.py").read_text()
        self.answers: dict[str, str] = {}
        for answer in load_spec(ROOT / "tasks" / task_id).answers:
            self.answers[answer.name] = answer.text
            for mutation in [*mutate_all(answer.text), *rewrite_all(answer.text)]:
                self.answers[f"{answer.name}~{mutation.name}"] = mutation.text
        self.extractions = json.loads((REPLIES / task_id / "replies" / "extract.json").read_text())

    def __call__(self, request: LLMRequest) -> str | dict[str, Any]:
        purpose = request.metadata.purpose
        if purpose == "extract":
            prompt = request.prompt_text()
            found = [n for n, t in self.answers.items() if t.strip() in prompt]
            name = max(found, key=lambda n: len(self.answers[n]))
            entry = self.extractions.get(name) or self.extractions[name.split("~")[0]]
            return dict(entry.get(request.schema_name or "", entry))
        if purpose == "verify":
            return {"reasoning": "bench: supported", "result": True}
        if purpose == "reflect":
            first = request.metadata.label == "reflect_1"
            items = [item.id for item in load_checklist().items]
            status = "problem" if first else "ok"
            findings = [{"item": i, "status": status, "evidence": "-", "fix": "-"} for i in items]
            revised = f"```python\n{self.judge}# reviewed\n```\n" if first else ""
            return f"```json\n{json.dumps(findings)}\n```\n{revised}"
        return f"```python\n{self.judge}```\n"


def read_text(path: str) -> str:
    """A file's text (sync, outside the timed sections)."""
    return Path(path).read_text()


def scratch_repo(base: Path, task_id: str) -> Path:
    repo = base / "repo"
    shutil.copytree(ROOT / "tasks" / task_id, repo / "tasks" / task_id)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "tasks"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "tasks"], cwd=repo, check=True)
    return repo


def import_pages(store: Path) -> None:
    """The example pages, imported outside the timed section."""
    from toolkit.pages.m2w2 import import_m2w2
    from toolkit.pages.store import PageStore

    with PageStore(store) as pages:
        import_m2w2(ROOT / "examples" / "pages", pages)


async def one_generation(task_id: str, local: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        repo = scratch_repo(Path(tmp), task_id)
        import_pages(Path(tmp) / "pages")
        loaded = load_spec(repo / "tasks" / task_id)
        client = LLMClient(ScriptedProvider(InstantModel(task_id)), model="bench-model")
        isolation: Isolation = "in_process" if local else "sandbox"
        options = PipelineOptions(
            model="bench-model",
            extract_model="bench",
            repo=repo,
            isolation=isolation,
            pages=Path(tmp) / "pages",
        )
        started = time.perf_counter()
        result = await generate(loaded, client, None, options)
        total = time.perf_counter() - started
        source = read_text(result.publish.judge_path)
        started = time.perf_counter()
        lint_source(source, f"{task_id}.py")
        lint = time.perf_counter() - started
        started = time.perf_counter()
        report = await debug_stage(source, loaded, None, isolation=isolation)
        debug = time.perf_counter() - started
        assert report.runs, "the debug stage ran nothing"
        reflect_tokens = [
            len(request.prompt_text()) // 4
            for request in client.provider.calls  # type: ignore[attr-defined]
            if request.metadata.purpose == "reflect"
        ]
    record = result.record
    return {
        "total": total,
        "lint": lint,
        "debug": debug,
        "usage": {
            row.purpose: (row.calls, row.input_tokens, row.output_tokens) for row in record.usage
        },
        "reflect_tokens": reflect_tokens,
        "kill_rate": record.mutation.kill_rate if record.mutation else None,
    }


def review_usage(text: str) -> tuple[int, int, int]:
    """(calls, input tokens, output tokens) of one review sidecar's usage table."""
    rows = json.loads(text)["usage"]
    return (
        sum(r["calls"] for r in rows),
        sum(r["input_tokens"] for r in rows),
        sum(r["output_tokens"] for r in rows),
    )


def baseline_lines(revision: str) -> list[str]:
    """Example generations' calls and tokens at `revision` (before) and now (after)."""
    lines = []
    for sidecar in sorted((ROOT / "reviews").glob("*.json")):
        if sidecar.name.endswith(".approval.json"):
            continue
        show = ["git", "show", f"{revision}:reviews/{sidecar.name}"]
        old = subprocess.run(show, cwd=ROOT, capture_output=True, text=True, check=True).stdout
        (bc, bi, bo), (ac, ai, ao) = review_usage(old), review_usage(sidecar.read_text())
        lines.append(
            f"  {sidecar.stem}: before {bc} calls, {bi / 1000:.1f}k in / {bo / 1000:.1f}k out; "
            f"after {ac} calls, {ai / 1000:.1f}k in / {ao / 1000:.1f}k out"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="rust_2024_edition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--local", action="store_true", help="Debug in-process (no sandbox).")
    parser.add_argument("--baseline", help="git revision whose example review records to compare")
    args = parser.parse_args()
    os.environ.update({k: os.environ.get(k, v) for k, v in GIT_ENV.items()})
    runs = [asyncio.run(one_generation(args.task, args.local)) for _ in range(args.repeat)]
    best = min(runs, key=lambda r: r["total"])
    mode = "in-process" if args.local else "sandboxed"
    print(
        f"generate {args.task} ({mode}, 3 answers x 4 patterns, acceptance, mutation, "
        f"2 reflection passes): {best['total']:.2f} s non-LLM total (target <= 5 s); "
        f"alone: lint {best['lint']:.2f} s, debug stage {best['debug']:.2f} s"
    )
    usage = best["usage"]
    calls = sum(c for c, _, _ in usage.values())
    tokens_in = sum(i for _, i, _ in usage.values())
    tokens_out = sum(o for _, _, o in usage.values())
    parts = ", ".join(f"{purpose} {c}" for purpose, (c, _, _) in usage.items())
    print(
        f"LLM per generation: {calls} calls ({parts}), {tokens_in / 1000:.1f}k in / "
        f"{tokens_out / 1000:.1f}k out tokens (scripted estimates); kill rate {best['kill_rate']}"
    )
    print(
        "reflection input tokens per pass: "
        + ", ".join(f"pass {n}: {t}" for n, t in enumerate(best["reflect_tokens"], 1))
    )
    if args.baseline:
        print(f"example generations (review records), {args.baseline} vs now:")
        print("\n".join(baseline_lines(args.baseline)))


if __name__ == "__main__":
    main()
