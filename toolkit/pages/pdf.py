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
    """The text of every page of a PDF, pages separated by blank lines."""
    if not looks_like_pdf(None, data[:1024]):
        raise PdfTextError("not a PDF (no %PDF- header)")
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise PdfTextError(f"unreadable PDF: {type(exc).__name__}: {exc}") from exc
    return "\n\n".join(text.strip() for text in pages).strip()
