"""The end-of-run warning on cited pages missing from the page store."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.cli.run_outcome import _warn_missing_pages
from toolkit.pages import PageRecord, PageStore


def test_the_missing_pages_warning_names_a_stored_page_a_missed_url_nearly_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cited URL missed over a spelling (`/wiki/ada_lovelace` for `/wiki/Ada_Lovelace`)
    scores its claims unsupported: the warning says which stored page it nearly names."""
    with PageStore(tmp_path / "pages") as store:
        store.put(PageRecord.web("https://en.wikipedia.org/wiki/Ada_Lovelace", "Ada", None))
    cited = "https://en.wikipedia.org/wiki/ada_lovelace"
    _warn_missing_pages({"agent/t1/answer_1": [cited]}, "--answers answers", tmp_path / "pages")
    err = capsys.readouterr().err
    assert "1 cited page(s) missing for 1 answer(s)" in err
    assert f"{cited} is not stored, but https://en.wikipedia.org/wiki/Ada_Lovelace is" in err


def test_the_missing_pages_warning_gives_no_hint_without_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _warn_missing_pages({"a/t/x": ["https://example.com/a"]}, "--answers answers", None)
    _warn_missing_pages({"a/t/x": ["https://example.com/a"]}, "--answers a", tmp_path / "none")
    assert "is not stored, but" not in capsys.readouterr().err
