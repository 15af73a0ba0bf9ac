"""Result freshness covers what was judged: the pages read, the pages missing, judge templates."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import prompts
from generator.cli import fresh_stamp, main
from tests.fixtures.runner.helpers import (
    BACKEND,
    PAGES,
    result_files,
    run_args,
    self_reading_judge,
)
from toolkit.pages import PageRecord, PageStore
from toolkit.pages import store as page_store
from toolkit.runner.fingerprint import judge_templates_sha256

LOUVRE = "https://www.louvre.fr/en/visit/hours-admission"


def run(work: Path, *extra: str, pages: bool = True, sandbox: bool = False, backend: str = BACKEND):
    mode = [] if sandbox else ["--no-sandbox"]
    args = run_args(
        work, "--include-unreviewed", "--json", *mode, *extra, pages=pages, backend=backend
    )
    return CliRunner().invoke(main, args, catch_exceptions=False)


def reads(result: dict) -> dict:
    """The pages a result's evaluation read and missed (none for answers no judge ran on)."""
    return result["fingerprint"]["pages"] or {"read": {}, "missing": []}


def citing(results: dict[str, dict], url: str) -> set[str]:
    """Result files whose evaluation read or missed `url`."""
    return {
        name
        for name, result in results.items()
        if url in reads(result)["read"] or url in reads(result)["missing"]
    }


def test_run_without_pages_warns_and_a_rerun_with_pages_redoes_the_results(work: Path) -> None:
    first = run(work, pages=False, sandbox=True)
    assert first.exit_code == 0, first.stderr
    assert "--pages was not given" in first.stderr
    assert "judgegen cache-pages --answers" in first.stderr
    missed = json.loads(first.stdout)["missing_pages"]
    assert "alpha/louvre_hours/answer_1" in missed
    before = result_files(work / "results")
    assert all(not reads(r)["read"] for r in before.values())

    again = run(work, pages=False, sandbox=True)
    assert json.loads(again.stdout)["reused"] == len(before)
    assert "--pages was not given" in again.stderr

    with_pages = run(work, sandbox=True)
    record = json.loads(with_pages.stdout)
    redone = {n for n, r in before.items() if reads(r)["missing"]}
    assert record["evaluated"] == len(redone) > 0
    assert record["reused"] == len(before) - len(redone)
    after = result_files(work / "results")
    read = reads(after["alpha/louvre_hours/answer_1.json"])["read"]
    assert read[LOUVRE].startswith("sha256:")
    scores = {n: (before[n]["final_score"], after[n]["final_score"]) for n in redone}
    assert any(old != new for old, new in scores.values()), scores


def test_a_changed_page_redoes_only_the_results_that_read_it(work: Path) -> None:
    assert run(work).exit_code == 0
    readers = citing(result_files(work / "results"), LOUVRE)
    assert readers
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(LOUVRE, PAGES[LOUVRE] + " Closed on 1 May.", None))
    record = json.loads(run(work).stdout)
    assert record["evaluated"] == len(readers)
    assert json.loads(run(work).stdout)["evaluated"] == 0


def test_a_missing_page_that_appears_redoes_the_results_that_cited_it(work: Path) -> None:
    shutil.rmtree(work / "pages")
    with PageStore(work / "pages") as store:
        for url, text in PAGES.items():
            if url != LOUVRE:
                store.put(PageRecord.web(url, text, None))
    first = run(work)
    assert "not in the page store" in first.stderr
    readers = citing(result_files(work / "results"), LOUVRE)
    assert readers
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(LOUVRE, PAGES[LOUVRE], None))
    again = run(work)
    assert json.loads(again.stdout)["evaluated"] == len(readers)
    assert "not in the page store" not in again.stderr


def test_a_result_judged_against_a_home_page_stored_as_the_cited_page_is_redone(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older judgegen stored the Louvre's home page, where the site had sent the cited
    page, as that page, and judged against it; today the store reads it as missing."""
    home = "Musée du Louvre. Welcome! Plan your visit, exhibitions and events."
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(LOUVRE, home, None, final_url="https://www.louvre.fr/en/"))
    with monkeypatch.context() as before_the_rule:
        before_the_rule.setattr(page_store, "served_instead", lambda *args, **kwargs: None)
        assert run(work).exit_code == 0
    first = result_files(work / "results")
    judged = citing(first, LOUVRE)
    assert judged and all(LOUVRE in reads(first[name])["read"] for name in judged)
    # the new rule comes with new code, which no stamp of the earlier run's vouches for; here
    # the code files are the same, so the stamp goes by hand
    fresh_stamp.remove_stamp(work / "results")
    again = run(work)
    assert json.loads(again.stdout)["evaluated"] == len(judged)
    missed = json.loads(again.stdout)["missing_pages"]
    assert all(LOUVRE in missed[name.removesuffix(".json")] for name in judged)
    assert "the site's home page stored in their place" in again.stderr
    assert json.loads(run(work).stdout)["evaluated"] == 0


def test_a_result_judged_against_a_soft_404_an_older_judgegen_stored_is_redone_page_missing(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older judgegen stored the Louvre's "Page not found" (HTTP 200) as the cited page, a
    record captured before the soft-404 rule; today the store tells it from its text."""
    gone = "Musée du Louvre\nPage not found\nThe page you requested has moved."
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(LOUVRE, gone, None, final_url=LOUVRE, version=2))
    with monkeypatch.context() as before_the_rule:
        before_the_rule.setattr(page_store, "stored_wall", lambda *args, **kwargs: None)
        assert run(work).exit_code == 0
    first = result_files(work / "results")
    judged = citing(first, LOUVRE)
    assert judged and all(LOUVRE in reads(first[name])["read"] for name in judged)
    fresh_stamp.remove_stamp(work / "results")  # as above: the stamp goes by hand
    again = run(work)
    assert json.loads(again.stdout)["evaluated"] == len(judged)
    missed = json.loads(again.stdout)["missing_pages"]
    assert all(LOUVRE in missed[name.removesuffix(".json")] for name in judged)
    assert json.loads(run(work).stdout)["evaluated"] == 0


def copy_prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "prompts"
    shutil.copytree(prompts.PROMPTS_DIR, copy)
    monkeypatch.setattr(prompts, "PROMPTS_DIR", copy)
    return copy


def test_editing_a_generator_template_keeps_results_fresh(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copy_prompts(work, monkeypatch)
    assert run(work).exit_code == 0
    generator_template = next((copy / "generator").rglob("*.j2"))
    generator_template.write_text(generator_template.read_text() + "\nAn edit.\n")
    again = json.loads(run(work).stdout)
    assert (again["evaluated"], again["reused"]) == (0, len(result_files(work / "results")))


def test_editing_a_judge_template_redoes_every_judged_result(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = copy_prompts(work, monkeypatch)
    first = json.loads(run(work).stdout)
    digest = judge_templates_sha256()
    template = copy / "toolkit" / "verify_page.j2"
    template.write_text(template.read_text() + "\nAn edit.\n")
    assert judge_templates_sha256() != digest
    assert json.loads(run(work).stdout)["evaluated"] == first["evaluated"]


@pytest.fixture
def toolkit_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the toolkit's source that `toolkit_identity` hashes instead of the real one."""
    import toolkit
    from toolkit.runner import fingerprint

    copy = tmp_path / "toolkit"
    shutil.copytree(Path(toolkit.__file__).parent, copy, ignore=shutil.ignore_patterns("*.pyc"))
    monkeypatch.setattr(toolkit, "__file__", str(copy / "__init__.py"))
    fingerprint.toolkit_code.cache_clear()
    yield copy
    fingerprint.toolkit_code.cache_clear()


def test_the_toolkit_identity_changes_with_its_code_and_only_with_its_code(
    toolkit_copy: Path,
) -> None:
    from toolkit.runner.fingerprint import toolkit_code, toolkit_identity

    before = toolkit_identity()
    assert before.startswith("0.1.0+code.")
    (toolkit_copy / "__pycache__").mkdir(exist_ok=True)
    (toolkit_copy / "__pycache__" / "tree.cpython-311.pyc").write_bytes(b"bytecode")
    (toolkit_copy / "notes.txt").write_text("not code")
    toolkit_code.cache_clear()
    assert toolkit_identity() == before
    tree = toolkit_copy / "tree.py"
    tree.write_text(tree.read_text() + "\n# an edit\n")
    toolkit_code.cache_clear()
    edited = toolkit_identity()
    assert edited != before
    (toolkit_copy / "checks" / "new_rule.py").write_text("RULE = 1\n")
    toolkit_code.cache_clear()
    assert toolkit_identity() not in {before, edited}


def test_results_from_other_toolkit_code_are_redone_not_reused(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fix to scoring or voting in a checkout keeps the version number: results the old code
    computed must not pass as fresh."""
    from toolkit.runner import fingerprint

    first = json.loads(run(work).stdout)
    stamped = {r["fingerprint"]["toolkit_version"] for r in result_files(work / "results").values()}
    assert stamped == {fingerprint.toolkit_identity()}
    assert json.loads(run(work).stdout)["evaluated"] == 0
    monkeypatch.setattr(fingerprint, "toolkit_identity", lambda: "0.1.0+code.otherchange")
    assert json.loads(run(work).stdout)["evaluated"] == first["evaluated"]


def metadata_folder(root: Path, name: str, version: str) -> Path:
    """An import-path entry holding the metadata folder of release `version` of `name`."""
    (root / f"{name}-{version}.dist-info").mkdir(parents=True)
    return root


def test_installed_versions_are_those_import_finds_first(tmp_path: Path) -> None:
    from toolkit.runner.fingerprint import installed_versions

    first = metadata_folder(tmp_path / "first", "Jinja2", "3.2.0")
    metadata_folder(first, "pydantic_core", "2.50.0")
    later = metadata_folder(tmp_path / "later", "jinja2", "3.1.6")
    metadata_folder(later, "publicsuffixlist", "1.0.0.20250101")
    wanted = ("jinja2", "pydantic-core", "publicsuffixlist", "pydantic")

    found = installed_versions(wanted, [str(first), str(tmp_path / "missing"), str(later)])

    assert found == {
        "jinja2": "3.2.0",
        "pydantic-core": "2.50.0",
        "publicsuffixlist": "1.0.0.20250101",
    }


def test_results_judged_under_another_release_of_a_verdict_package_are_redone(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """publicsuffixlist's releases change what `url_in_domain` decides: a result judged under
    another one must not pass as fresh, though no code of judgegen's changed."""
    from toolkit.runner import fingerprint

    first = json.loads(run(work).stdout)
    assert json.loads(run(work).stdout)["evaluated"] == 0
    upgraded = metadata_folder(tmp_path / "upgraded", "publicsuffixlist", "9.9.9.20991231")
    monkeypatch.syspath_prepend(str(upgraded))
    fingerprint.toolkit_code.cache_clear()
    try:
        again = json.loads(run(work).stdout)
    finally:
        fingerprint.toolkit_code.cache_clear()

    assert again["evaluated"] == first["evaluated"] > 0


def shown(results: dict[str, dict], url: str) -> dict[str, str | None]:
    """The screenshot hash each result recorded for `url`, by result file (sent it or not)."""
    return {
        name: reads(r)["shots"][url]
        for name, r in results.items()
        if url in reads(r).get("shots", {})
    }


@pytest.mark.parametrize("sandbox", [False, True], ids=["in_process", "sandboxed"])
def test_a_new_screenshot_of_a_page_redoes_the_results_that_were_sent_it(
    work: Path, sandbox: bool
) -> None:
    """The screenshot travels with every claim checked against the page: a recapture that
    changes only the picture (a chart, a price in an image) must not leave results fresh."""
    assert run(work, sandbox=sandbox).exit_code == 0
    before = shown(result_files(work / "results"), LOUVRE)
    assert before and set(before.values()) == {None}  # the fixture pages have no screenshot
    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 8
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(LOUVRE, PAGES[LOUVRE], jpeg))
    assert json.loads(run(work, sandbox=sandbox).stdout)["evaluated"] == len(before)
    after = shown(result_files(work / "results"), LOUVRE)
    assert set(after) == set(before) and len(set(after.values())) == 1
    assert next(iter(after.values())).startswith("sha256:")
    assert json.loads(run(work, sandbox=sandbox).stdout)["evaluated"] == 0
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(LOUVRE, PAGES[LOUVRE], jpeg[::-1]))
    assert json.loads(run(work, sandbox=sandbox).stdout)["evaluated"] == len(before)


def test_a_result_that_only_read_a_pages_text_stays_fresh_when_its_screenshot_changes(
    work: Path,
) -> None:
    """A judge that searches the page text itself never sent the screenshot to anyone."""
    (work / "judges" / "louvre_hours.py").write_text(self_reading_judge(work))
    assert run(work).exit_code == 0
    name = "alpha/louvre_hours/answer_1.json"
    first = result_files(work / "results")[name]
    assert LOUVRE in reads(first)["read"] and reads(first)["shots"] == {}
    with PageStore(work / "pages") as store:
        store.put(PageRecord.web(LOUVRE, PAGES[LOUVRE], b"\xff\xd8\xff\xe0 a picture"))
    assert run(work).exit_code == 0
    assert result_files(work / "results")[name] == first


def counts(record: dict) -> dict[str, int]:
    """Each status's result count over every agent of a run's `--json` record."""
    summaries = record["summaries"].values()
    return {k: sum(s["counts"][k] for s in summaries) for k in ("complete", "excluded")}


def test_answers_excluded_as_too_large_are_judged_once_the_limit_allows_them(work: Path) -> None:
    """Too large is decided by --max-answer-bytes, not by the answer's bytes alone: a stored
    exclusion must not outlive the limit that made it."""
    small = json.loads(run(work, "--max-answer-bytes", "10").stdout)
    assert counts(small) == {"complete": 1, "excluded": 10}  # the empty answer is 4 bytes

    again = json.loads(run(work).stdout)

    assert (again["evaluated"], again["reused"]) == (10, 1)
    assert counts(again) == {"complete": 11, "excluded": 0}
    assert not any(r["status"] == "excluded" for r in result_files(work / "results").values())


def test_judged_answers_are_excluded_once_a_lower_limit_makes_them_too_large(work: Path) -> None:
    assert run(work).exit_code == 0

    lowered = json.loads(run(work, "--max-answer-bytes", "300").stdout)

    le_guin = {n: r for n, r in result_files(work / "results").items() if "alpha/le_guin" in n}
    assert {r["status"] for r in le_guin.values()} == {"excluded"}  # 350 and 305 bytes
    assert all("> limit 300 (--max-answer-bytes)" in r["reason"] for r in le_guin.values())
    assert lowered["reused"] == 11 - len(le_guin) and lowered["evaluated"] == 0
    assert counts(lowered) == {"complete": 9, "excluded": 2}


def test_a_limit_that_changes_no_answers_outcome_keeps_every_result(work: Path) -> None:
    """The limit is not in the fingerprint: raising it re-spends no LLM call on answers it
    never excluded."""
    assert run(work).exit_code == 0
    before = result_files(work / "results")

    raised = json.loads(run(work, "--max-answer-bytes", "4000000").stdout)

    assert (raised["evaluated"], raised["reused"]) == (0, len(before))
    assert result_files(work / "results") == before


OWN_BACKEND = """
from tests.fixtures.runner.scripted import extract
from toolkit import ScriptedBackend, Verdict

import {helper} as rule


def factory():
    backend = ScriptedBackend(extract=extract, verify=lambda r: Verdict(passed=rule.PASSED, reasoning="own"))
    backend.model = "own-judge"
    return backend
"""


@pytest.fixture
def own_backend(work: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A `--backend` factory of the working directory (`backend93:factory`) whose verdicts
    come from a helper module it imports (returned: `rule93.py`, every claim passing). Its
    modules are forgotten after the test."""
    (work / "backend93.py").write_text(OWN_BACKEND.format(helper="rule93"))
    (work / "rule93.py").write_text("PASSED = True\n")
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(work))
    yield work / "rule93.py"
    forget_modules_of(work)


def forget_modules_of(folder: Path) -> None:
    """Drop the modules loaded from `folder`: the next run imports them anew, as the next
    `judgegen` process would."""
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(folder)):
            del sys.modules[name]


def test_an_edited_backend_factory_redoes_the_results_it_judged(
    work: Path, own_backend: Path
) -> None:
    """A `--backend` is the user's code deciding every verdict: a result it judged before an
    edit (to its module, or a module of the user's it imports) is not the result it gives now."""
    first = json.loads(run(work, backend="backend93:factory").stdout)
    assert first["evaluated"] == 10
    scores = {n: r["final_score"] for n, r in result_files(work / "results").items()}
    own_backend.write_text("PASSED = False\n")
    forget_modules_of(work)

    again = json.loads(run(work, backend="backend93:factory").stdout)

    assert (again["evaluated"], again["decided"], again["reused"]) == (10, 1, 0)
    rescored = {n: r["final_score"] for n, r in result_files(work / "results").items()}
    assert rescored != scores


def test_an_unchanged_backend_factory_keeps_every_result(work: Path, own_backend: Path) -> None:
    assert run(work, backend="backend93:factory").exit_code == 0
    before = result_files(work / "results")
    forget_modules_of(work)

    again = json.loads(run(work, backend="backend93:factory").stdout)

    assert (again["evaluated"], again["reused"]) == (0, 11)
    assert result_files(work / "results") == before


@pytest.fixture
def importing_judge(work: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """louvre_hours importing its domain from a module of the user's (returned:
    `judges/support93.py`), importable from the working directory; forgotten afterwards."""
    judges = work / "judges"
    (judges / "support93.py").write_text('DOMAIN = "louvre.fr"\n')
    judge = judges / "louvre_hours.py"
    source = judge.read_text().replace('"louvre.fr")', "DOMAIN)")
    imports = "from toolkit import Evaluator, checks\n"
    judge.write_text(source.replace(imports, f"{imports}\nfrom judges.support93 import DOMAIN\n"))
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(work))
    yield judges / "support93.py"
    forget_modules_of(work)


def louvre_errors(work: Path) -> list[list[dict]]:
    """The errors of each louvre_hours result."""
    results = result_files(work / "results").items()
    return [r["errors"] for name, r in results if "/louvre_hours/" in name]


def test_a_judge_importing_a_module_of_the_users_is_refused_in_process(
    work: Path, importing_judge: Path
) -> None:
    """A judge is known by its own bytes (`judge_sha256`, what its approval binds): a module of
    the user's it imports is neither, so the judge is refused, never run on a module whose
    edits would leave its results fresh."""
    first = json.loads(run(work).stdout)

    assert (first["evaluated"], len(first["incomplete"])) == (10, 4)
    (error,) = {json.dumps(errors) for errors in louvre_errors(work)}
    [refusal] = json.loads(error)
    assert (refusal["type"], refusal["kind"]) == ("JudgeImportError", "judge_load")
    judge = work / "judges" / "louvre_hours.py"
    assert f"the judge {judge} imports a module of the user's" in refusal["message"]
    assert f"`judges.support93` (line 7) from {importing_judge}" in refusal["message"]
    assert "A judge is one module: move what it uses into the judge" in refusal["message"]
    assert "JG003" in refusal["message"]
    assert "judges.support93" not in sys.modules  # nothing of the user's was run


def test_an_edited_module_a_refused_judge_imports_leaves_no_result_fresh(
    work: Path, importing_judge: Path
) -> None:
    assert json.loads(run(work).stdout)["evaluated"] == 10
    importing_judge.write_text('DOMAIN = "example.org"\n')

    again = json.loads(run(work).stdout)

    assert (again["evaluated"], len(again["incomplete"])) == (4, 4)  # louvre_hours, refused


def test_a_judge_importing_a_module_of_the_users_is_refused_the_same_way_sandboxed(
    work: Path, importing_judge: Path
) -> None:
    run(work)
    in_process = louvre_errors(work)
    shutil.rmtree(work / "results")

    sandboxed = json.loads(run(work, sandbox=True).stdout)

    assert len(sandboxed["incomplete"]) == 4
    assert louvre_errors(work) == in_process
