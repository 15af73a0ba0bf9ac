"""A rerun with nothing to redo is answered from the fresh stamp exactly as the slow fresh path
would answer it, and any change to what that answer depends on sends it down the slow path."""

from __future__ import annotations

import errno
import fcntl
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
import unicodedata
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from generator.cli import fresh_stamp, main
from generator.cli import run as run_command
from generator.cli.fresh_stamp import STAMP_FILE, Unstampable, read_stamp, replay, stamp_key
from generator.cli.fresh_stamp_record import FreshStamp
from tests.fixtures.runner.helpers import (
    PAGES,
    build_page_store,
    copy_fixtures,
    load_code_now,
    result_files,
)
from toolkit.llm.cache import CacheRecord, ResponseCache, record_json
from toolkit.pages import PageRecord, PageStore
from toolkit.runner import freshness
from toolkit.runner.approval import approve
from toolkit.runner.fingerprint import judge_templates_sha256
from toolkit.runner.results_lock import LOCK_FILE, results_lock
from toolkit.util import files

REPO = Path(__file__).resolve().parents[2]
PROVIDER = "scripted:tests.fixtures.runner.llm_policy:policy"
LOUVRE = "https://www.louvre.fr/en/visit/hours-admission"
ANSWERS = 11
JUDGED = 10
"""Answers with a result, and those a judge ran on (one answer is empty: scored 0 as it is)."""

pytestmark = pytest.mark.usefixtures("code_loaded_now")
"""Runs in this process take judgegen's code as loaded when each test starts (see
`test_a_session_started_just_after_its_code_changed_stamps_each_tests_runs`)."""


def run_args(work: Path, *extra: str, inputs: str = "--answers answers") -> list[str]:
    """An in-process `judgegen run` over the runner fixtures, judged by the real LLM backend
    with a scripted provider (a --backend factory never takes the fast path)."""
    flag, folder = inputs.split()
    return [
        "run",
        *(flag, str(work / folder), "--judges", str(work / "judges")),
        *("--results", str(work / "results"), "--reviews", str(work / "reviews")),
        *("--pages", str(work / "pages"), "--provider", PROVIDER, "--cache-mode", "off"),
        *("--include-unreviewed", "--no-sandbox", "--json"),
        *extra,
    ]


class Runs:
    """`judgegen run` in process, noting whether each one was answered from the stamp."""

    def __init__(self, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.work = work
        self.inputs = "--answers answers"
        self.answered: list[bool] = []
        self.params: dict[str, Any] = {}

        def spy(params: dict[str, Any]) -> int | None:
            self.params = dict(params)
            code = real(params)
            self.answered.append(code is not None)
            return code

        real = fresh_stamp.replay
        monkeypatch.setattr(fresh_stamp, "replay", spy)

    def __call__(self, *extra: str) -> Result:
        args = run_args(self.work, *extra, inputs=self.inputs)
        return CliRunner().invoke(main, args, catch_exceptions=False)

    def record(self, *extra: str) -> dict[str, Any]:
        """The JSON record of a run that exits 0."""
        result = self(*extra)
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    @property
    def stamp(self) -> Path:
        return self.work / "results" / STAMP_FILE

    def first(self) -> dict[str, Any]:
        """A full run, which leaves a stamp."""
        record = self.record()
        assert (record["evaluated"], self.stamp.is_file()) == (JUDGED, True)
        return record

    def slow(self, *extra: str) -> dict[str, Any]:
        """A run the stamp did not answer."""
        record = self.record(*extra)
        assert self.answered[-1] is False
        return record


@pytest.fixture
def runs(work: Path, monkeypatch: pytest.MonkeyPatch) -> Runs:
    return Runs(work, monkeypatch)


# --- the fast path prints what the slow path prints ------------------------------------------

PROBE = """
import json, os, sys
from generator.cli import main
try:
    main(sys.argv[1:], prog_name="judgegen")
finally:
    with open(os.environ["PROBE_MODULES"], "w") as out:
        json.dump(sorted(sys.modules), out)
"""


def judgegen(work: Path, *args: str) -> tuple[subprocess.CompletedProcess[bytes], set[str]]:
    """`judgegen ARGS` in a fresh interpreter: the process and the modules it loaded."""
    modules = work / "modules.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PROBE_MODULES": str(modules)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=work, env=env, capture_output=True
    )
    return done, set(json.loads(modules.read_text()))


@pytest.mark.parametrize("output", [["--json"], []], ids=["json", "table"])
def test_a_stamped_rerun_prints_byte_for_byte_what_the_slow_fresh_path_prints(
    tmp_path: Path, output: list[str]
) -> None:
    copy_fixtures(tmp_path)
    build_page_store(tmp_path / "pages")
    args = [a for a in run_args(tmp_path) if a != "--json"] + output
    full, _ = judgegen(tmp_path, *args)
    assert full.returncode == 0, full.stderr.decode()
    fast, fast_modules = judgegen(tmp_path, *args)
    (tmp_path / "results" / STAMP_FILE).unlink()
    slow, slow_modules = judgegen(tmp_path, *args)
    assert "toolkit.runner.freshness" in slow_modules
    assert not {"pydantic", "asyncio", "toolkit.runner.freshness"} & fast_modules
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, slow.stdout, slow.stderr)
    assert b"up to date" in fast.stderr and (tmp_path / "results" / STAMP_FILE).is_file()


def test_a_full_run_stamps_what_its_rerun_prints(runs: Runs) -> None:
    runs.first()
    fast = runs()
    runs.stamp.unlink()
    slow = runs()
    assert runs.answered[-2:] == [True, False]
    assert (fast.stdout, fast.stderr) == (slow.stdout, slow.stderr)
    assert json.loads(fast.stdout)["reused"] == ANSWERS


def newest_code_change_ns() -> int:
    """The newest ctime among judgegen's code files, as the stamp lists them."""
    newest = 0
    for name in fresh_stamp.CODE_PACKAGES:
        root = Path(importlib.import_module(name).__file__ or "").parent
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for file in names:
                newest = max(newest, os.stat(os.path.join(folder, file)).st_ctime_ns)
    return newest


def test_a_session_started_just_after_its_code_changed_stamps_each_tests_runs(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What once failed the test above at random: the session loaded judgegen's code within
    `SETTLE_S` of a change to it (the tests started right after a cherry-pick), so the stamp
    rightly vouched for no run of the session. Each test takes the code as loaded when it
    starts (`code_loaded_now`), so a change before the test does not matter to it."""
    monkeypatch.setattr(fresh_stamp, "CODE_LOADED_NS", newest_code_change_ns() + 1)
    assert runs.record()["evaluated"] == JUDGED
    assert not runs.stamp.exists()  # what the session's runs did: the stamp's rule, kept
    load_code_now(monkeypatch)  # what `code_loaded_now` does as each test starts
    assert runs.slow()["reused"] == ANSWERS and runs.stamp.is_file()
    assert runs.record()["reused"] == ANSWERS and runs.answered[-1] is True


def test_an_overwrite_run_ignores_the_stamp_and_stamps_the_plain_rerun(runs: Runs) -> None:
    runs.first()
    assert runs.record("--overwrite")["evaluated"] == JUDGED
    assert runs.answered[-1] is False
    assert runs.record()["reused"] == ANSWERS
    assert runs.answered[-1] is True


# --- whatever the answer depends on sends a rerun down the slow path -------------------------


def replayed(work: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Record the scripted provider's answers to every request of a run (into a results
    folder of its own), export them to `work/recordings`; the flags that replay them."""
    monkeypatch.setenv("JUDGEGEN_LEDGER_PATH", str(work / "ledger.jsonl"))
    args = run_args(work, "--cache-mode", "rw", "--results", str(work / "recording"))
    env = {"JUDGEGEN_CACHE_PATH": str(work / "recorded.sqlite")}
    assert CliRunner(env=env).invoke(main, args, catch_exceptions=False).exit_code == 0
    ResponseCache(work / "recorded.sqlite").export_dir(work / "recordings")
    return ("--provider", f"replay:{work / 'recordings'}")


def rerecord_every_claim_unsupported(recordings: Path) -> None:
    """Rewrite the recordings in place as if the model now said no to every claim."""
    for path in recordings.glob("*.json"):
        record = CacheRecord.model_validate_json(path.read_text(encoding="utf-8"))
        if record.request.schema_name == "VerificationResult":
            parsed = {"reasoning": "re-recorded: unsupported", "result": False}
            response = record.response.model_copy(
                update={"parsed": parsed, "text": json.dumps(parsed, sort_keys=True)}
            )
            path.write_text(record_json(record.model_copy(update={"response": response})))


def test_recordings_rerecorded_in_place_redo_the_results_replayed_from_them(
    runs: Runs, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replay_flags = replayed(work, monkeypatch)
    first = runs.record(*replay_flags)
    assert (first["evaluated"], runs.stamp.is_file()) == (JUDGED, True)
    rerecord_every_claim_unsupported(work / "recordings")
    again = runs.slow(*replay_flags)
    assert (again["evaluated"], again["summaries"] != first["summaries"]) == (JUDGED, True)


def test_recordings_rerecorded_in_place_make_results_stale_without_a_stamp_too(
    runs: Runs, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replay_flags = replayed(work, monkeypatch)
    assert runs.record(*replay_flags)["evaluated"] == JUDGED
    runs.stamp.unlink()
    rerecord_every_claim_unsupported(work / "recordings")
    assert runs.slow(*replay_flags)["evaluated"] == JUDGED


def test_unchanged_recordings_keep_every_result_with_or_without_a_stamp(
    runs: Runs, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replay_flags = replayed(work, monkeypatch)
    assert runs.record(*replay_flags)["evaluated"] == JUDGED
    assert runs.record(*replay_flags)["reused"] == ANSWERS and runs.answered[-1] is True
    runs.stamp.unlink()
    slow = runs(*replay_flags)
    assert (runs.answered[-1], json.loads(slow.stdout)["reused"]) == (False, ANSWERS)
    assert "LLM: 0 calls" in slow.stderr


@pytest.fixture
def own_policy(work: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A scripted policy module of the run's own, `work_policy.py`, answering as the fixture's."""
    module = work / "work_policy.py"
    module.write_text("from tests.fixtures.runner.llm_policy import policy  # noqa: F401\n")
    monkeypatch.syspath_prepend(str(work))
    yield module
    sys.modules.pop("work_policy", None)


def test_an_edited_scripted_policy_redoes_the_results_it_answered(
    runs: Runs, own_policy: Path
) -> None:
    flags = ("--provider", "scripted:work_policy:policy")
    assert runs.record(*flags)["evaluated"] == JUDGED
    own_policy.write_text(own_policy.read_text() + "# edited\n")
    assert runs.slow(*flags)["evaluated"] == JUDGED


ANSWERING = "from tests.fixtures.runner.llm_policy import policy  # noqa: F401\n"
POLICIES_WITH_HELPERS = {
    "helper": (
        "scripted:work_policy:policy",
        {"work_policy.py": "from work_helpers import policy  # noqa: F401\n"},
        ("work_helpers.py", ANSWERING),
    ),
    "relative": (
        "scripted:work_policies.judge:policy",
        {
            "work_policies/__init__.py": "",
            "work_policies/judge.py": "from . import answers\n\npolicy = answers.policy\n",
        },
        ("work_policies/answers.py", ANSWERING),
    ),
}
"""A policy whose answers come from a module of the run's own it imports: a helper module of
the working directory (`import`-ed by name), a package's module imported relatively; each
with its provider and the helper (path, source)."""


@pytest.fixture(params=sorted(POLICIES_WITH_HELPERS))
def helped_policy(
    request: pytest.FixtureRequest, work: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[tuple[str, str], Path]]:
    """Writes a `POLICIES_WITH_HELPERS` policy under `work` (importable from it): its
    --provider flags and its helper module's file. Its modules are forgotten after."""
    provider, modules, (helper, source) = POLICIES_WITH_HELPERS[request.param]
    for relative, text in {**modules, helper: source}.items():
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        (work / relative).write_text(text)
    monkeypatch.syspath_prepend(str(work))
    yield ("--provider", provider), work / helper
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(work)):
            del sys.modules[name]


def test_an_edited_module_the_policy_imports_redoes_the_results_it_answered(
    runs: Runs, helped_policy: tuple[tuple[str, str], Path]
) -> None:
    flags, helper = helped_policy
    assert runs.record(*flags)["evaluated"] == JUDGED
    helper.write_text(helper.read_text() + "# edited\n")
    assert runs.slow(*flags)["evaluated"] == JUDGED


def test_an_edited_module_the_policy_imports_makes_results_stale_without_a_stamp_too(
    runs: Runs, helped_policy: tuple[tuple[str, str], Path]
) -> None:
    flags, helper = helped_policy
    assert runs.record(*flags)["evaluated"] == JUDGED
    runs.stamp.unlink()
    helper.write_text(helper.read_text() + "# edited\n")
    assert runs.slow(*flags)["evaluated"] == JUDGED


OPTIONAL_HELPER = """
try:
    from work_optional import policy  # noqa: F401
except ImportError:
    from tests.fixtures.runner.llm_policy import policy  # noqa: F401
"""


@pytest.mark.parametrize("stamped", [True, False], ids=["stamp", "no-stamp"])
def test_a_module_added_where_the_policy_now_imports_it_redoes_the_results(
    runs: Runs, own_policy: Path, stamped: bool
) -> None:
    own_policy.write_text(OPTIONAL_HELPER)
    flags = ("--provider", "scripted:work_policy:policy")
    assert runs.record(*flags)["evaluated"] == JUDGED
    if not stamped:
        runs.stamp.unlink()
    (own_policy.parent / "work_optional.py").write_text(ANSWERING)
    try:
        assert runs.slow(*flags)["evaluated"] == JUDGED
    finally:
        sys.modules.pop("work_optional", None)


def test_a_stamp_lists_again_the_files_its_provider_answers_from(
    runs: Runs, helped_policy: tuple[tuple[str, str], Path]
) -> None:
    flags, helper = helped_policy
    assert runs.record(*flags)["evaluated"] == JUDGED
    stamp = read_stamp(runs.stamp)
    assert stamp is not None and stamp["provider"] == flags[1]
    assert str(helper.resolve()) in stamp["watched"]
    assert runs.record(*flags)["reused"] == ANSWERS and runs.answered[-1] is True


def test_unchanged_modules_the_policy_imports_keep_every_result_with_or_without_a_stamp(
    runs: Runs, helped_policy: tuple[tuple[str, str], Path]
) -> None:
    flags, _ = helped_policy
    assert runs.record(*flags)["evaluated"] == JUDGED
    assert runs.record(*flags)["reused"] == ANSWERS and runs.answered[-1] is True
    runs.stamp.unlink()
    slow = runs(*flags)
    assert (runs.answered[-1], json.loads(slow.stdout)["reused"]) == (False, ANSWERS)
    assert "LLM: 0 calls" in slow.stderr


def test_an_edited_judge_redoes_its_results(runs: Runs, work: Path) -> None:
    runs.first()
    judge = work / "judges" / "louvre_hours.py"
    judge.write_text(judge.read_text() + "\n# edited\n")
    assert runs.slow()["evaluated"] == 4


def test_an_edited_answer_is_redone(runs: Runs, work: Path) -> None:
    runs.first()
    answer = work / "answers" / "alpha" / "louvre_hours" / "answer_1.md"
    answer.write_text(answer.read_text() + "\nAlso open on Mondays.\n")
    assert runs.slow()["evaluated"] == 1


def test_an_added_answer_is_judged(runs: Runs, work: Path) -> None:
    runs.first()
    task = work / "answers" / "alpha" / "louvre_hours"
    shutil.copy(task / "answer_1.md", task / "answer_3.md")
    assert runs.slow()["evaluated"] == 1


def test_a_removed_answer_is_no_longer_reported(runs: Runs, work: Path) -> None:
    runs.first()
    (work / "answers" / "alpha" / "python_match" / "answer_2.md").unlink()
    record = runs.slow()
    assert (record["evaluated"], record["reused"]) == (0, ANSWERS - 1)


def test_an_approval_clears_the_unreviewed_flag_of_its_results(runs: Runs, work: Path) -> None:
    runs.first()
    approve(
        "louvre_hours", reviewer="Ada", judges_dir=work / "judges", reviews_dir=work / "reviews"
    )
    runs.slow()
    flags = {n: r["unreviewed_judge"] for n, r in result_files(work / "results").items()}
    assert {n for n, unreviewed in flags.items() if not unreviewed} == {
        n for n in flags if "/louvre_hours/" in n
    }


def test_a_changed_environment_variable_is_a_changed_configuration(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs.first()
    monkeypatch.setenv("JUDGEGEN_LLM_MODEL", "another-model")
    assert runs.slow()["evaluated"] == JUDGED


def test_a_changed_flag_takes_the_slow_path_once(runs: Runs) -> None:
    runs.first()
    assert runs.slow("--timeout", "300")["reused"] == ANSWERS
    assert runs.record("--timeout", "300")["reused"] == ANSWERS
    assert runs.answered[-1] is True


def test_a_config_file_added_or_changed_takes_the_slow_path(
    runs: Runs, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work)
    runs.first()
    config = work / "judgegen.toml"
    config.write_text('[llm]\nmodel = "model-a"\n')
    assert runs.slow()["evaluated"] == JUDGED
    config.write_text('[llm]\nmodel = "model-b"\n')
    assert runs.slow()["evaluated"] == JUDGED


def readers(work: Path, url: str) -> set[str]:
    """Result files whose evaluation read or missed `url`."""
    return {
        name
        for name, result in result_files(work / "results").items()
        if url in json.dumps(result["fingerprint"]["pages"])
    }


def test_a_changed_page_redoes_the_results_that_read_it(runs: Runs, work: Path) -> None:
    runs.first()
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(LOUVRE, PAGES[LOUVRE] + " Closed on 1 May.", None))
    assert runs.slow()["evaluated"] == len(readers(work, LOUVRE)) > 0


def test_a_page_changed_while_the_run_ends_is_not_stamped_fresh(
    runs: Runs, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = run_command.record

    def page_changes_first(params: dict[str, Any], render: Any, **keyed: Any) -> bool:
        with PageStore(work / "pages") as store:  # e.g. a `cache-pages` finishing now
            store.put(PageRecord.web(LOUVRE, PAGES[LOUVRE] + " Closed on 1 May.", None))
        return real(params, render, **keyed)

    monkeypatch.setattr(run_command, "record", page_changes_first)
    assert runs.record()["evaluated"] == JUDGED
    monkeypatch.setattr(run_command, "record", real)
    assert runs.slow()["evaluated"] == len(readers(work, LOUVRE)) > 0


def test_a_page_added_to_the_store_redoes_the_results_that_missed_it(
    runs: Runs, work: Path
) -> None:
    shutil.rmtree(work / "pages")
    with PageStore(work / "pages") as store:
        for url, text in PAGES.items():
            if url != LOUVRE:
                store.put(PageRecord.web(url, text, None))
    first = runs.record()
    assert LOUVRE in json.dumps(first["missing_pages"]) and runs.stamp.is_file()
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(LOUVRE, PAGES[LOUVRE], None))
    record = runs.slow()
    assert record["evaluated"] == len(readers(work, LOUVRE)) > 0
    assert LOUVRE not in json.dumps(record["missing_pages"])


def test_a_garbled_result_file_is_redone(runs: Runs, work: Path) -> None:
    runs.first()
    (work / "results" / "alpha" / "louvre_hours" / "answer_1.json").write_text("{")
    assert runs.slow()["evaluated"] == 1


def test_an_edited_result_file_is_what_the_rerun_reports(runs: Runs, work: Path) -> None:
    runs.first()
    path = work / "results" / "beta" / "python_match" / "answer_1.json"
    result = json.loads(path.read_text())
    result["duration_s"] = 42.0
    path.write_text(json.dumps(result))
    record = runs.slow()
    assert record["reused"] == ANSWERS
    assert record["summaries"]["beta"]["duration_s"] >= 42.0


def test_a_deleted_result_file_is_redone(runs: Runs, work: Path) -> None:
    runs.first()
    (work / "results" / "alpha" / "louvre_hours" / "answer_1.json").unlink()
    assert runs.slow()["evaluated"] == 1


def test_a_deleted_summary_is_written_again(runs: Runs, work: Path) -> None:
    runs.first()
    summary = work / "results" / "alpha" / "summary.json"
    summary.unlink()
    assert runs.slow()["reused"] == ANSWERS
    assert summary.is_file()


def test_a_trajectory_rerun_is_stamped_and_a_missing_score_file_is_written_again(
    runs: Runs, work: Path
) -> None:
    runs.inputs = "--trajectories webeval/fara-run"
    assert runs.record()["evaluated"] > 0 and runs.stamp.is_file()
    assert runs.record()["reused"] == len(result_files(work / "results"))
    assert runs.answered[-1] is True
    score = work / "webeval/fara-run/traj/louvre_hours/scores/judgegen_louvre_hours.json"
    score.unlink()
    assert runs.slow()["evaluated"] == 0
    assert score.is_file()


def test_a_rerun_under_another_score_name_is_not_answered_by_the_stamp(
    runs: Runs, work: Path
) -> None:
    runs.inputs = "--trajectories webeval/fara-run"
    runs.record()
    assert runs.record()["evaluated"] == 0 and runs.answered[-1] is True

    assert runs.slow("--score-name", "o3")["evaluated"] == 0

    folder = work / "webeval/fara-run/traj/louvre_hours/scores"
    assert sorted(p.name for p in folder.iterdir()) == ["o3_louvre_hours.json"]  # its only name


# --- no stamp, or no use of one, whenever in doubt -------------------------------------------


def test_a_run_with_incomplete_evaluations_removes_the_stamp_and_writes_none(
    runs: Runs, work: Path
) -> None:
    runs.first()
    judge = work / "judges" / "louvre_hours.py"
    judge.write_text(judge.read_text() + "\n\nraise RuntimeError('judge broken')\n")
    assert runs().exit_code == 1
    assert runs.answered[-1] is False and not runs.stamp.exists()
    assert runs().exit_code == 1 and not runs.stamp.exists()


@pytest.mark.parametrize(
    "garble",
    [
        lambda stamp: "{",
        lambda stamp: json.dumps({**stamp, "version": fresh_stamp.STAMP_VERSION + 1}),
        lambda stamp: json.dumps({**stamp, "exit_code": "0"}),
        lambda stamp: json.dumps({**stamp, "exit_code": 1}),
        lambda stamp: json.dumps({k: v for k, v in stamp.items() if k != "hashed"}),
        lambda stamp: json.dumps({**stamp, "extra": 1}),
        lambda stamp: json.dumps([stamp]),
    ],
    ids=[
        "truncated",
        "other-version",
        "code-as-text",
        "nonzero-code",
        "missing-field",
        "extra-field",
        "list",
    ],
)
def test_a_garbled_or_foreign_stamp_is_no_stamp(runs: Runs, garble: Any) -> None:
    runs.first()
    runs.stamp.write_text(garble(json.loads(runs.stamp.read_text())))
    assert runs.slow()["reused"] == ANSWERS
    assert read_stamp(runs.stamp) is not None  # the slow path stamped it again


def test_a_stamp_under_another_key_is_not_used(runs: Runs) -> None:
    runs.first()
    stamp = json.loads(runs.stamp.read_text())
    runs.stamp.write_text(json.dumps({**stamp, "key": "sha256:" + "0" * 64, "stdout": "stale"}))
    assert runs.slow()["reused"] == ANSWERS


def test_a_busy_results_folder_is_left_to_the_slow_path(
    runs: Runs, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs.first()
    runs()
    assert runs.answered[-1] is True
    with results_lock(work / "results"):
        assert replay(runs.params) is None
    assert replay(runs.params) == 0
    assert json.loads(capsys.readouterr().out)["reused"] == ANSWERS


def test_a_run_in_a_folder_that_cannot_be_locked_leaves_no_stamp(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(fd: int, operation: int) -> None:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", unsupported)  # e.g. a FUSE mount
    result = runs()
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["evaluated"] == JUDGED
    assert "has no file locks" in result.stderr
    assert not runs.stamp.exists()  # unlocked, another run may write: nothing is vouched for


def test_a_run_warning_of_a_leftover_agent_folder_leaves_no_stamp_to_replay_without_it(
    runs: Runs, work: Path
) -> None:
    """An agent `café` whose results an earlier judgegen wrote under the NFD spelling: each
    rerun says so again, none answered by a stamp that would leave the warning out."""
    (work / "answers" / "alpha").rename(work / "answers" / unicodedata.normalize("NFC", "café"))
    leftover = work / "results" / unicodedata.normalize("NFD", "café") / "louvre_hours"
    leftover.mkdir(parents=True)
    (leftover / "answer_1.json").write_text("{}", encoding="utf-8")

    first, again = runs(), runs()

    assert (first.exit_code, again.exit_code) == (0, 0), first.stderr
    assert not runs.stamp.exists()
    assert runs.answered == [False, False]
    assert "no run updates" in again.stderr


def test_a_warning_while_rendering_the_rerun_leaves_no_stamp(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = freshness.skipped_judges

    def warning(judges: Any) -> Any:
        warnings.warn("a rerun would print this", UserWarning, stacklevel=1)
        return real(judges)

    monkeypatch.setattr(freshness, "skipped_judges", warning)
    with pytest.warns(UserWarning, match="a rerun would print this"):
        assert CliRunner().invoke(main, run_args(work)).exit_code == 0
    assert not (work / "results" / STAMP_FILE).exists()


def test_a_stamp_that_cannot_be_written_leaves_the_run_as_it_was(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(path: Path, data: Any) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(files, "write_atomic", full_disk)  # what the stamp writer calls
    result = CliRunner().invoke(main, run_args(work))
    assert result.exit_code == 0 and json.loads(result.stdout)["evaluated"] == JUDGED
    assert not (work / "results" / STAMP_FILE).exists()


@pytest.fixture
def own_code(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A package counted as judgegen's code (beside toolkit, generator and prompts), loaded by
    this process, and a packages folder on the path, both taken by the stamp as loaded after
    they were written."""
    root = tmp_path_factory.mktemp("code")
    package = root / "stampcode"
    package.mkdir()
    (package / "__init__.py").write_text("from stampcode import helpers\n")
    (package / "helpers.py").write_text("VALUE = 1\n")
    (root / "site-packages").mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.syspath_prepend(str(root / "site-packages"))
    importlib.import_module("stampcode")
    monkeypatch.setattr(fresh_stamp, "CODE_PACKAGES", (*fresh_stamp.CODE_PACKAGES, "stampcode"))
    written = max(p.stat().st_ctime_ns for p in [*package.iterdir(), root / "site-packages"])
    monkeypatch.setattr(fresh_stamp, "SETTLE_S", 0.01)  # a packages folder has no such margin
    monkeypatch.setattr(fresh_stamp, "CODE_LOADED_NS", written + 10_000_001)
    time.sleep(0.05)  # a later change gets a later ctime, whatever the file system's clock tick
    yield package
    for name in ("stampcode", "stampcode.helpers"):
        sys.modules.pop(name, None)


def test_a_run_whose_code_is_unchanged_since_loading_is_stamped(runs: Runs, own_code: Path) -> None:
    runs.first()
    runs()
    assert runs.answered[-1] is True


@pytest.mark.parametrize(
    "change",
    [
        lambda package: (package / "helpers.py").write_text("VALUE = 2\n"),
        lambda package: (package / "helpers.py").unlink(),
        lambda package: (package / "plugin.py").write_text("NEW = True\n"),
        lambda package: (package.parent / "site-packages" / "new_dep.py").write_text(""),
    ],
    ids=["edited", "loaded-file-removed", "added", "package-installed"],
)
def test_a_run_whose_code_changed_after_loading_is_not_stamped(
    work: Path, own_code: Path, change: Callable[[Path], object]
) -> None:
    """The new code's key must not replay what the old code printed (a `git pull` during a
    long run)."""
    change(own_code)
    result = CliRunner().invoke(main, run_args(work))
    assert result.exit_code == 0 and json.loads(result.stdout)["evaluated"] == JUDGED
    assert not (work / "results" / STAMP_FILE).exists()


def test_a_backend_factory_is_never_stamped(work: Path) -> None:
    args = run_args(work, "--backend", "tests.fixtures.runner.scripted:factory")
    assert CliRunner().invoke(main, args).exit_code == 0
    assert not (work / "results" / STAMP_FILE).exists()


def test_a_large_file_changed_just_now_is_known_by_content(
    runs: Runs, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs.first()
    runs()
    monkeypatch.setattr(fresh_stamp, "CONTENT_LIMIT", 16)
    key, hashed = stamp_key(runs.params)
    page_store = str(work / "pages" / "pages.sqlite")
    assert page_store in hashed
    assert stamp_key(runs.params, hashed) == (key, hashed)
    with pytest.raises(Unstampable, match="too recently"):
        stamp_key(runs.params, frozenset())


def test_the_stamp_model_writes_what_the_stdlib_reader_accepts(tmp_path: Path) -> None:
    stamp = FreshStamp(key="sha256:k", hashed=["pages/x"], stdout="o", stderr="e", exit_code=0)
    (tmp_path / STAMP_FILE).write_text(stamp.model_dump_json())
    assert read_stamp(tmp_path / STAMP_FILE) == {
        "version": fresh_stamp.STAMP_VERSION,
        "key": "sha256:k",
        "hashed": frozenset({"pages/x"}),
        "watched": (),
        "provider": None,
        "stdout": "o",
        "stderr": "e",
        "exit_code": 0,
    }


def test_the_stamp_keys_the_templates_and_lock_the_runner_uses() -> None:
    assert fresh_stamp._templates_digest() == judge_templates_sha256()
    assert fresh_stamp.LOCK_FILE == LOCK_FILE


def test_a_tree_lists_its_folders_then_its_files_then_each_folder_in_turn(
    tmp_path: Path,
) -> None:
    for relative in ("b/y.json", "b/a/z.json", "a/x.json", "top.json", "b/skip.json"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(relative)
    manifest = fresh_stamp._Manifest(None)
    listed = manifest.tree(tmp_path, lambda name: True, skip=lambda rel: rel == "b/skip.json")
    digest = {rel: fresh_stamp._file_sha256(str(tmp_path / rel)) for rel in ("a/x.json",)}
    assert [entry[0] for entry in listed] == [
        "a",
        "b",
        "top.json",
        "a/x.json",
        "b/a",
        "b/y.json",
        "b/a/z.json",
    ]
    assert listed[3] == ["a/x.json", digest["a/x.json"]]
    (tmp_path / "b" / "link").symlink_to(tmp_path / "a")
    with pytest.raises(Unstampable, match="symlink"):
        manifest.tree(tmp_path, lambda name: True, skip=lambda rel: False)
