"""Generation bench: the non-LLM time of one full generation (target ≤ 5 s).

One generation of an example task with a scripted model that answers instantly: the draft is
already the final judge, so the time is the lint stage, the debug stage (3 sample answers ×
4 verdict patterns, plus the all-pass rerun, in the sandbox), one reflection pass that changes
nothing, and the publish stage (files + a commit with git plumbing in a scratch repository).
Prints the total, and the lint and debug stages timed alone, the best of `--repeat` runs.

    python bench/generate_bench.py [--task rust_2024_edition] [--repeat 3] [--local]
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

from generator.stages.debug import debug_stage
from generator.stages.lint import lint_source
from generator.stages.pipeline import generate
from generator.stages.run import PipelineOptions
from generator.stages.spec import load_spec
from toolkit.llm.client import LLMClient
from toolkit.llm.models import LLMRequest
from toolkit.llm.scripted import ScriptedProvider

ROOT = Path(__file__).resolve().parents[1]
REPLIES = ROOT / "tests" / "fixtures" / "generator" / "examples"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


class InstantModel:
    """Draft = the published judge; reflection finds nothing; extraction from the fixtures."""

    def __init__(self, task_id: str) -> None:
        self.judge = (ROOT / "generated_judges" / f"{task_id}.py").read_text()
        self.answers = {a.name: a.text for a in load_spec(ROOT / "tasks" / task_id).answers}
        self.extractions = json.loads((REPLIES / task_id / "replies" / "extract.json").read_text())

    def __call__(self, request: LLMRequest) -> str | dict[str, Any]:
        purpose = request.metadata.purpose
        if purpose == "extract":
            prompt = request.prompt_text()
            name = next(n for n, t in self.answers.items() if t.strip() in prompt)
            return self.extractions[name]
        if purpose == "reflect":
            items = ("correctness", "coherence", "completeness", "edge_cases")
            findings = [{"item": i, "status": "ok", "evidence": "-", "fix": ""} for i in items]
            return {"findings": findings, "revised_script": None}
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


async def one_generation(task_id: str, local: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        repo = scratch_repo(Path(tmp), task_id)
        loaded = load_spec(repo / "tasks" / task_id)
        client = LLMClient(ScriptedProvider(InstantModel(task_id)), model="bench-model")
        isolation = "in_process" if local else "sandbox"
        options = PipelineOptions(
            model="bench-model", extract_model="bench", repo=repo, isolation=isolation
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
    return {"total": total, "lint": lint, "debug": debug}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="rust_2024_edition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--local", action="store_true", help="Debug in-process (no sandbox).")
    args = parser.parse_args()
    os.environ.update({k: os.environ.get(k, v) for k, v in GIT_ENV.items()})
    runs = [asyncio.run(one_generation(args.task, args.local)) for _ in range(args.repeat)]
    best = min(runs, key=lambda r: r["total"])
    mode = "in-process" if args.local else "sandboxed"
    print(
        f"generate {args.task} ({mode} debug, 3 answers x 4 patterns): "
        f"{best['total']:.2f} s non-LLM total (target <= 5 s); "
        f"alone: lint {best['lint']:.2f} s, debug stage {best['debug']:.2f} s"
    )


if __name__ == "__main__":
    main()
