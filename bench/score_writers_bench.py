"""Score-writer bench: what `judgegen run --trajectories` spends, before judging, finding out
which results folders wrote the score files it is about to replace (`score_writers`).

It lays out a webeval run of N trajectories (450 by default) in a temp folder, each with a
score file written by `write_score_file` from a result whose tree has --nodes nodes and as
many verifications (a Mind2Web 2 judge's tree has up to 603), and times, in this process
(wall and CPU time, each the median of --repeat rounds after one warm-up):
  ours      every score file written by this run's results folder: the usual rerun;
  legacy    every score file written before the writer was recorded (parsed whole, once:
            the run then rewrites them);
  roots     `recorded_roots` over the same results folder, the check each run already makes
            (one result per task folder: for trajectories, every result).

    PYTHONPATH=. python bench/score_writers_bench.py [--trajectories 450] [--nodes 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolkit.runner.fingerprint import Fingerprint
from toolkit.runner.results import (
    EvaluationResult,
    ResultStore,
    ScoreFile,
    ScoreFiles,
    recorded_roots,
    score_writers,
    write_score_file,
)
from toolkit.util.files import write_atomic


def big_result(task_id: str, traj_dir: Path, nodes: int) -> EvaluationResult:
    """A complete result with a flat tree of `nodes` leaves and as many verifications."""
    leaves = [
        {
            "id": f"item_{i}_supported",
            "desc": f"Item {i}: the cited page supports the claim about opening hours " * 2,
            "critical": False,
            "score": 1.0,
            "status": "passed",
            "strategy": "parallel",
            "children": [],
        }
        for i in range(nodes)
    ]
    tree = {"id": "root", "desc": "root", "critical": False, "score": 1.0, "status": "passed"}
    verifications = [
        {
            "node": f"item_{i}_supported",
            "claim": f"The Louvre is open until 21:00 on Wednesdays (item {i}).",
            "source": f"https://example.org/page/{i}",
            "verdict": True,
            "reasoning": "The page lists Wednesday and Friday evening hours until 21:00. " * 3,
        }
        for i in range(nodes)
    ]
    return EvaluationResult(
        task_id=task_id,
        agent_name="run",
        answer_name="final_answer",
        status="complete",
        final_score=1.0,
        eval_breakdown=[{"verification_tree": {**tree, "children": leaves}}],
        verifications=verifications,
        input_kind="trajectory",
        input_path=str(traj_dir / f"{task_id}_final_answer.json"),
        fingerprint=Fingerprint(
            templates_sha256="sha256:t", toolkit_version="0", backend="b", answer_sha256="sha256:a"
        ),
    )


def median_ms(work: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(wall, CPU) milliseconds of `work`, each the median of `repeat` runs after a warm-up:
    on a busy machine the CPU time is the steadier figure."""
    work()
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=450)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        traj, results = root / "run" / "traj", root / "results"
        scores = ScoreFiles.of(results)
        pairs = []
        for i in range(args.trajectories):
            task_id = f"task_{i:04d}"
            folder = traj / task_id
            result = big_result(task_id, folder, args.nodes)
            ResultStore(results).write(result)
            write_score_file(folder, task_id, result, writer=scores.writer)
            pairs.append((folder, task_id))
        size = scores.path(*pairs[0]).stat().st_size
        print(f"{args.trajectories} trajectories, score files of {size / 1024:.0f} KiB")

        found = score_writers(pairs, scores)
        assert not (found.others or found.gone or found.unnamed), found
        ours = median_ms(lambda: score_writers(pairs, scores), args.repeat)
        roots = median_ms(lambda: recorded_roots(results, "run"), args.repeat)

        for folder, task_id in pairs:  # as judgegen wrote them before naming the writer
            path = scores.path(folder, task_id)
            payload = json.loads(json.loads(path.read_bytes())["gpt_response_text"])
            payload.pop("judgegen_results_folder")
            text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
            write_atomic(path, ScoreFile(score=1.0, gpt_response_text=text).model_dump_json())
        assert len(score_writers(pairs, scores).unnamed) == args.trajectories
        legacy = median_ms(lambda: score_writers(pairs, scores), args.repeat)

        print("                        wall ms   CPU ms")
        for label, (wall, cpu), note in (
            ("score_writers, ours:  ", ours, ""),
            ("score_writers, legacy:", legacy, "  (once: the run rewrites them)"),
            ("recorded_roots:       ", roots, "  (the existing check, for scale)"),
        ):
            print(f"{label} {wall:7.1f}  {cpu:7.1f}{note}")


if __name__ == "__main__":
    main()
