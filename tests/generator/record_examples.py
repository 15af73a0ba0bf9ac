"""Re-record the example generations: `python -m tests.generator.record_examples [TASK_ID...]`.

Each example task `tasks/<id>/` has the scripted "model" replies under
`tests/fixtures/generator/examples/<id>/replies/` (drafts, repairs, reflections, extractions,
written by hand). This runs the pipeline with that scripted model through a response cache,
exports every exchange to `recordings/<id>/`, then runs exactly what the README runs,
`judgegen generate <id> --provider replay:recordings/<id> --cache-mode off --no-commit`, so the
committed judge and review record are what a replay reproduces. Run it after changing the
prompts, the API reference or the mistakes catalog (the recorded requests embed them).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

from generator.pipeline import PipelineOptions, generate
from generator.spec import load_spec
from tests.generator.scripted_generation import FixturePolicy
from toolkit.llm.cache import CacheMode, ResponseCache
from toolkit.llm.client import LLMClient
from toolkit.llm.scripted import ScriptedProvider
from toolkit.llm.settings import DEFAULT_GENERATION_MODEL, DEFAULT_JUDGE_MODEL

ROOT = Path(__file__).resolve().parents[2]
REPLIES = ROOT / "tests" / "fixtures" / "generator" / "examples"
RECORDINGS = ROOT / "recordings"


def example_ids() -> list[str]:
    """Every example task that has scripted replies."""
    return sorted(p.name for p in REPLIES.iterdir() if (p / "replies").is_dir())


async def record(task_id: str, cache_path: Path) -> int:
    """Run the scripted generation through a fresh cache and export it; returns the count."""
    task_dir = ROOT / "tasks" / task_id
    cache = ResponseCache(cache_path)
    policy = FixturePolicy(task_dir, REPLIES / task_id / "replies", fixed_usage=False)
    clients = [
        LLMClient(ScriptedProvider(policy), cache=cache, cache_mode=CacheMode.RW, model=model)
        for model in (DEFAULT_GENERATION_MODEL, DEFAULT_JUDGE_MODEL)
    ]
    with tempfile.TemporaryDirectory() as scratch:
        options = PipelineOptions(
            model=DEFAULT_GENERATION_MODEL,
            extract_model=DEFAULT_JUDGE_MODEL,
            repo=Path(scratch),
            commit=False,
        )
        await generate(load_spec(task_dir), clients[0], clients[1], options)
    target = RECORDINGS / task_id
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.json"):
        old.unlink()
    count = cache.export_dir(target)
    cache.close()
    return count


def replay(task_id: str) -> None:
    """Generate the committed judge and review record from the recordings, as the README does."""
    command = [
        sys.executable,
        "-c",
        "from generator.cli import main; main()",
        "generate",
        task_id,
        "--provider",
        f"replay:recordings/{task_id}",
        "--cache-mode",
        "off",
        "--no-commit",
    ]
    subprocess.run(command, cwd=ROOT, check=True)


def main(task_ids: list[str]) -> None:
    """Record, then replay, each example task."""
    for task_id in task_ids or example_ids():
        with tempfile.TemporaryDirectory() as tmp:
            count = asyncio.run(record(task_id, Path(tmp) / "cache.sqlite"))
        print(f"{task_id}: {count} recordings", file=sys.stderr)
        replay(task_id)


if __name__ == "__main__":
    main(sys.argv[1:])
