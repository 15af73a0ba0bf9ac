"""Text extraction from PDFs: a PDF with no text layer is an error, never an empty page."""

from __future__ import annotations

import pytest

from tests.pages.pdfs import build_pdf
from toolkit.pages.pdf import PdfTextError, pdf_text


def test_a_pdfs_text_is_extracted() -> None:
    assert pdf_text(build_pdf("Quarterly revenue was 7 million")) == (
        "Quarterly revenue was 7 million"
    )


def test_a_pdf_without_a_text_layer_is_an_error_naming_why() -> None:
    with pytest.raises(PdfTextError, match=r"no text layer in its 1 page\(s\)"):
        pdf_text(build_pdf(""))


def test_bytes_that_are_not_a_pdf_are_an_error() -> None:
    with pytest.raises(PdfTextError, match="not a PDF"):
        pdf_text(b"<html>")
