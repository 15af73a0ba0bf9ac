"""PDF detection and text extraction (pypdf), shared by page capture and the Mind2Web 2 import.

pypdf loads only when a PDF is read: `judgegen run` opens the page store through this package
and never parses a PDF.
"""

from __future__ import annotations

import io

PDF_MAGIC = b"%PDF-"


class PdfTextError(ValueError):
    """The bytes are not a PDF pypdf can read."""


def looks_like_pdf(content_type: str | None, head: bytes = b"") -> bool:
    """Whether a response is a PDF, by its Content-Type or by the `%PDF-` magic bytes."""
    if content_type and "pdf" in content_type.lower():
        return True
    return head.lstrip()[:5] == PDF_MAGIC


def pdf_text(data: bytes) -> str:
    """The text of every page of a PDF, pages separated by blank lines. A PDF with no text at
    all (a scanned document) raises `PdfTextError`: judges see a PDF's text only, so stored,
    it would have every claim checked against nothing and found unsupported without a word."""
    if not looks_like_pdf(None, data[:1024]):
        raise PdfTextError("not a PDF (no %PDF- header)")
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise PdfTextError(f"unreadable PDF: {type(exc).__name__}: {exc}") from exc
    text = "\n\n".join(page.strip() for page in pages).strip()
    if not text:
        raise PdfTextError(
            f"the PDF has no text layer in its {len(pages)} page(s) (a scanned document?): "
            "nothing in it can be checked"
        )
    return text
