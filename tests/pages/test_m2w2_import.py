"""Importing a Mind2Web 2 page cache: naming rule, pages, PDFs, failures, reported problems."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.fixtures.cli_flags import flags_named, flags_of
from toolkit.pages import (
    PageStore,
    import_m2w2,
    m2w2_address,
    m2w2_file_stem,
    m2w2_storage_key,
)
from toolkit.urls import canonical_url

REPO = Path(__file__).resolve().parents[2]

JPEG = b"\xff\xd8\xff\xe0shot"


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def write_task(task_dir: Path, index: dict[str, str], files: dict[str, bytes]) -> None:
    task_dir.mkdir(parents=True)
    (task_dir / "index.json").write_text(json.dumps(index), encoding="utf-8")
    for name, data in files.items():
        (task_dir / name).write_bytes(data)


@pytest.fixture
def cache_tree(tmp_path: Path, make_pdf: Callable[[str], bytes]) -> Path:
    """agent_a/task_1: a web page, a PDF, an entry without files, an unknown type, a failure."""
    root = tmp_path / "m2w2_cache"
    web = "https://example.com/café/menu"
    pdf = "https://example.com/report.pdf"
    write_task(
        root / "agent_a" / "task_1",
        {web: "web", pdf: "pdf", "https://example.com/lost": "web", "https://example.com/z": "zip"},
        {
            f"{md5(web)}.txt": b"Soup of the day",
            f"{md5(web)}.jpg": JPEG,
            f"{md5(pdf)}.pdf": make_pdf("Revenue grew 12 percent"),
        },
    )
    (root / "agent_a" / "task_1" / "failures.json").write_text(
        json.dumps({"https://example.com/blocked": {"reason": "403 Forbidden", "attempts": 2}}),
        encoding="utf-8",
    )
    return root


def test_storage_key_drops_fragment_decodes_and_removes_one_trailing_slash() -> None:
    assert m2w2_storage_key("https://a.example/b%20c/#part") == "https://a.example/b c"
    assert m2w2_storage_key("https://a.example//") == "https://a.example/"


def test_file_stem_is_md5_of_storage_key() -> None:
    assert m2w2_file_stem("https://a.example/x/#y") == md5("https://a.example/x")


def test_import_stores_web_page_text_and_screenshot(cache_tree: Path, tmp_path: Path) -> None:
    with PageStore(tmp_path / "store") as store:
        import_m2w2(cache_tree, store)
        record = store.lookup("https://example.com/caf%C3%A9/menu")
    assert record is not None
    assert (record.kind, record.text, record.screenshot, record.origin) == (
        "web",
        "Soup of the day",
        JPEG,
        "m2w2",
    )


def test_import_extracts_pdf_text(cache_tree: Path, tmp_path: Path) -> None:
    with PageStore(tmp_path / "store") as store:
        import_m2w2(cache_tree, store)
        text = store.get("https://example.com/report.pdf")
    assert text is not None and "Revenue grew 12 percent" in text


def test_import_reports_entries_it_could_not_import(cache_tree: Path, tmp_path: Path) -> None:
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(cache_tree, store)
        assert store.lookup("https://example.com/lost") is None
    assert report.imported == 2
    assert {(p.url, p.reason.split(" ")[0]) for p in report.problems} == {
        ("https://example.com/lost", "text"),
        ("https://example.com/z", "unknown"),
    }


def test_import_records_failures_as_failures(cache_tree: Path, tmp_path: Path) -> None:
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(cache_tree, store)
        record = store.lookup("https://example.com/blocked")
        text = store.get("https://example.com/blocked")
    assert report.failures_imported == 1
    assert record is not None and record.status == "failed" and "403" in (record.error or "")
    assert text is None


def test_import_reports_unreadable_index(tmp_path: Path) -> None:
    task = tmp_path / "cache" / "agent" / "task"
    task.mkdir(parents=True)
    (task / "index.json").write_text("{not json", encoding="utf-8")
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(tmp_path / "cache", store)
    assert report.tasks == 1
    assert report.problems[0].url is None and "index.json" in report.problems[0].reason


def test_import_keeps_first_copy_of_a_url_cited_by_two_tasks(tmp_path: Path) -> None:
    url = "https://example.com/shared"
    for agent, text in [("agent_a", b"first"), ("agent_b", b"second")]:
        write_task(
            tmp_path / "cache" / agent / "task",
            {url: "web"},
            {f"{md5(url)}.txt": text, f"{md5(url)}.jpg": JPEG},
        )
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(tmp_path / "cache", store)
        assert store.get(url) == "first"
    assert (report.imported, report.already_stored) == (1, 1)


def test_cli_import_prints_json_report_and_exits_1_on_problems(
    cache_tree: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        main,
        ["cache-pages", "--import-m2w2", str(cache_tree), "--store", str(tmp_path / "s"), "--json"],
    )
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)["import"]
    assert report["imported"] == 2 and len(report["problems"]) == 2


def test_cli_import_into_a_store_that_is_not_a_database_exits_3_naming_it(
    cache_tree: Path, tmp_path: Path
) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "pages.sqlite").write_text("not a database, though named like one " * 4)
    result = CliRunner().invoke(
        main, ["cache-pages", "--import-m2w2", str(cache_tree), "--store", str(tmp_path / "s")]
    )
    assert result.exit_code == 3, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    assert "pages.sqlite is unusable: file is not a database" in result.stderr


def test_a_damaged_store_stops_cache_pages_with_a_fix_naming_only_its_flags(
    cache_tree: Path, tmp_path: Path
) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "pages.sqlite").write_text("not a database, though named like one " * 4)
    result = CliRunner().invoke(
        main, ["cache-pages", "--import-m2w2", str(cache_tree), "--store", str(tmp_path / "s")]
    )
    assert result.exit_code == 3
    assert "Fix: capture the pages into a new store instead: rerun with --store" in result.stderr
    assert flags_named(result.stderr) <= flags_of("cache-pages")


def test_a_pdf_without_text_is_reported_not_stored_as_an_empty_page(
    tmp_path: Path, make_pdf: Callable[[str], bytes]
) -> None:
    scan = "https://example.com/scan.pdf"
    write_task(
        tmp_path / "cache" / "agent_a" / "task_1", {scan: "pdf"}, {f"{md5(scan)}.pdf": make_pdf("")}
    )
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(tmp_path / "cache", store)
        assert store.lookup(scan) is None  # cited, it is missing: loud, never an empty page
    assert report.imported == 0
    assert [p.url for p in report.problems] == [scan]
    assert "no text layer" in report.problems[0].reason


def test_a_cached_bot_check_is_reported_not_stored_as_the_page(tmp_path: Path) -> None:
    url = "https://example.com/prices"
    text = b"Just a moment...\nEnable JavaScript and cookies to continue"
    write_task(tmp_path / "cache" / "agent_a" / "task_1", {url: "web"}, {f"{md5(url)}.txt": text})
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(tmp_path / "cache", store)
        assert store.lookup(url) is None
    assert report.imported == 0 and [p.url for p in report.problems] == [url]
    assert "bot check" in report.problems[0].reason


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (b"Example News\nPage not found\nTry the search above.", "not_found"),
        (b"Home News\nWe use cookies to improve your experience. Reject all Accept all", "consent"),
    ],
    ids=["soft 404", "consent banner"],
)
def test_a_cached_soft_404_or_consent_banner_is_reported_not_stored_as_the_page(
    tmp_path: Path, text: bytes, kind: str
) -> None:
    """No capture of ours read the page: its text is tested as a record stored before the
    rules reading the live page is, and a page so imported is never tested again."""
    url = "https://example.com/2023/story"
    write_task(tmp_path / "cache" / "agent_a" / "task_1", {url: "web"}, {f"{md5(url)}.txt": text})
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(tmp_path / "cache", store)
        assert store.lookup(url) is None
    assert report.imported == 0 and [p.url for p in report.problems] == [url]
    assert f"the cached text is not the page ({kind}" in report.problems[0].reason


@pytest.mark.parametrize("text", [b"", b" \n\t "], ids=["empty", "blank"])
def test_a_cached_page_with_nothing_to_judge_is_reported_not_counted_as_imported(
    tmp_path: Path, text: bytes
) -> None:
    url = "https://example.com/blank"
    write_task(tmp_path / "cache" / "agent_a" / "task_1", {url: "web"}, {f"{md5(url)}.txt": text})
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(tmp_path / "cache", store)
        assert store.counts()["ok"] == 0  # reads would never serve it
    assert report.imported == 0 and [p.url for p in report.problems] == [url]
    assert "nothing to judge" in report.problems[0].reason


def write_m2w2_task(task_dir: Path, pages: dict[str, str]) -> None:
    """A task folder as Mind2Web 2 writes it: keyed by storage key, files by its MD5."""
    keys = {m2w2_storage_key(url): text for url, text in pages.items()}
    write_task(
        task_dir,
        dict.fromkeys(keys, "web"),
        {f"{md5(key)}.txt": text.encode() for key, text in keys.items()},
    )


def test_address_re_encodes_what_decoding_produced_but_not_the_url_structure() -> None:
    assert m2w2_address("https://a.example/wiki/C#_(x)") == "https://a.example/wiki/C%23_(x)"
    assert m2w2_address("https://a.example/annual report") == "https://a.example/annual%20report"
    assert m2w2_address("https://a.example/a%20b") == "https://a.example/a%2520b"
    assert (
        m2w2_address("https://a.example/s?q=new+york&x=1") == "https://a.example/s?q=new+york&x=1"
    )
    assert m2w2_address("https://a.example/café/") == "https://a.example/café/"


def test_a_decoded_hash_is_imported_under_its_own_url_not_the_page_before_it(
    tmp_path: Path,
) -> None:
    csharp = "https://en.wikipedia.org/wiki/C%23_(programming_language)"
    c = "https://en.wikipedia.org/wiki/C"
    write_m2w2_task(tmp_path / "cache" / "agent" / "task", {csharp: "C# is", c: "C is"})
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(tmp_path / "cache", store)
        assert (store.get(csharp), store.get(c)) == ("C# is", "C is")
    assert (report.imported, report.problems) == (2, [])


def test_a_url_ending_in_punctuation_is_imported_under_itself_not_the_url_without_it(
    tmp_path: Path,
) -> None:
    """Mind2Web 2 fetched `…/Oklahoma!` (the musical); `…/Oklahoma` is the state."""
    musical = "https://en.wikipedia.org/wiki/Oklahoma!"
    write_m2w2_task(tmp_path / "cache" / "agent" / "task", {musical: "The musical"})
    with PageStore(tmp_path / "store") as store:
        import_m2w2(tmp_path / "cache", store)
        assert store.get(musical) == "The musical"
        assert store.get("https://en.wikipedia.org/wiki/Oklahoma") is None


def test_a_decoded_space_is_imported_under_its_percent_encoded_url(tmp_path: Path) -> None:
    url = "https://example.com/annual%20report"
    write_m2w2_task(tmp_path / "cache" / "agent" / "task", {url: "Revenue"})
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(tmp_path / "cache", store)
        assert store.get(url) == "Revenue"
    assert (report.imported, report.problems) == (1, [])


def test_a_decoded_plus_in_a_query_is_kept_as_a_literal_plus(tmp_path: Path) -> None:
    """`%2B` and `+` both decode to `+`; the literal (form-encoded space) reading is kept."""
    write_m2w2_task(
        tmp_path / "cache" / "agent" / "task", {"https://example.com/s?q=C%2B%2B": "Results"}
    )
    with PageStore(tmp_path / "store") as store:
        import_m2w2(tmp_path / "cache", store)
        record = store.lookup("https://example.com/s?q=C++")
    assert record is not None and record.url == "https://example.com/s?q=C++"


def test_a_failure_keyed_by_a_decoded_url_is_recorded_under_the_encoded_url(
    tmp_path: Path,
) -> None:
    task = tmp_path / "cache" / "agent" / "task"
    write_task(task, {}, {})
    (task / "failures.json").write_text(
        json.dumps({"https://example.com/wiki/C#_(x)": {"reason": "timeout"}}), encoding="utf-8"
    )
    with PageStore(tmp_path / "store") as store:
        import_m2w2(tmp_path / "cache", store)
        failed = store.lookup("https://example.com/wiki/C%23_(x)")
        assert store.lookup("https://example.com/wiki/C") is None
    assert failed is not None and failed.status == "failed"


def test_a_cache_keyed_by_url_keeps_its_keys(tmp_path: Path) -> None:
    """The examples' index.json is keyed by URL ("/downloads/"), files by storage key."""
    examples = REPO / "examples" / "pages"
    keys = [key for index in examples.rglob("index.json") for key in json.loads(index.read_text())]
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(examples, store)
        stored = [record.url for key in keys if (record := store.lookup(key)) is not None]
    assert report.problems == [] and keys
    assert stored == [canonical_url(key) for key in keys]


def test_an_older_cache_keyed_by_encoded_url_is_not_encoded_twice(tmp_path: Path) -> None:
    url = "https://example.com/caf%C3%A9/a%20b"
    write_task(
        tmp_path / "cache" / "agent" / "task", {url: "web"}, {f"{m2w2_file_stem(url)}.txt": b"x"}
    )
    with PageStore(tmp_path / "store") as store:
        import_m2w2(tmp_path / "cache", store)
        record = store.lookup(url)
    assert record is not None and record.url == url


APP = "https://app.example.com/"
PRICING = "https://app.example.com/#/pricing"
ABOUT = "https://app.example.com/#/about"


def test_a_hash_route_filed_under_its_apps_address_is_not_served_for_the_route(
    tmp_path: Path,
) -> None:
    """Mind2Web 2 drops the fragment: the route's page is filed under the app's address."""
    write_m2w2_task(tmp_path / "cache" / "agent" / "task", {PRICING: "Pro plan"})
    with PageStore(tmp_path / "store") as store:
        import_m2w2(tmp_path / "cache", store)
        assert (store.get(PRICING), store.has_page(PRICING)) == (None, False)


def test_a_cache_keyed_by_url_imports_a_hash_route_under_its_route(tmp_path: Path) -> None:
    write_task(
        tmp_path / "cache" / "agent" / "task",
        {PRICING: "web"},
        {f"{m2w2_file_stem(PRICING)}.txt": b"Pro plan"},
    )
    with PageStore(tmp_path / "store") as store:
        import_m2w2(tmp_path / "cache", store)
        record = store.lookup(PRICING)
        assert store.get(APP) is None
    assert record is not None and (record.url, record.text) == (PRICING, "Pro plan")


def test_hash_routes_sharing_one_file_are_reported_not_imported(tmp_path: Path) -> None:
    """A cache keyed by URL, files by storage key: both routes' files are the app's one file."""
    write_task(
        tmp_path / "cache" / "agent" / "task",
        {PRICING: "web", ABOUT: "web"},
        {f"{m2w2_file_stem(PRICING)}.txt": b"About us"},
    )
    with PageStore(tmp_path / "store") as store:
        report = import_m2w2(tmp_path / "cache", store)
        assert (store.get(PRICING), store.get(ABOUT), store.get(APP)) == (None, None, None)
    assert report.imported == 0
    assert [problem.url for problem in report.problems] == [PRICING, ABOUT]
    assert "which page they hold is unknown" in report.problems[0].reason
