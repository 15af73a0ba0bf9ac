"""Cited pages: the offline page store, capture and Mind2Web 2 import (URLs: `toolkit.urls`).

`PageStore` is the Evaluator's page source; `capture_pages` fills it with the system Chromium
(Playwright is imported only when a capture runs); `import_m2w2` fills it from a Mind2Web 2
page cache. A failed capture is recorded as a failure, never served as page text. Names load
on first use, so the page store alone (what `judgegen run` reads) does not import capture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.util.lazy import lazy_exports

if TYPE_CHECKING:
    from toolkit.pages.capture import (
        CHROMIUM_ARGS,
        DEFAULT_CHROMIUM,
        CaptureOptions,
        CaptureOutcome,
        CaptureReport,
        capture_page,
        capture_pages,
        default_chromium,
        require_chromium,
    )
    from toolkit.pages.citations import answer_files, answer_texts, cited_urls, cited_urls_in
    from toolkit.pages.m2w2 import (
        ImportProblem,
        ImportReport,
        import_m2w2,
        m2w2_address,
        m2w2_file_stem,
        m2w2_storage_key,
    )
    from toolkit.pages.pdf import PdfTextError, looks_like_pdf, pdf_text
    from toolkit.pages.store import PageRecord, PageStore, content_hash

# exported name -> the module that defines it
_HOMES = {
    "CHROMIUM_ARGS": "toolkit.pages.capture",
    "CaptureOptions": "toolkit.pages.capture",
    "CaptureOutcome": "toolkit.pages.capture",
    "CaptureReport": "toolkit.pages.capture",
    "DEFAULT_CHROMIUM": "toolkit.pages.capture",
    "ImportProblem": "toolkit.pages.m2w2",
    "ImportReport": "toolkit.pages.m2w2",
    "PageRecord": "toolkit.pages.store",
    "PageStore": "toolkit.pages.store",
    "PdfTextError": "toolkit.pages.pdf",
    "answer_files": "toolkit.pages.citations",
    "answer_texts": "toolkit.pages.citations",
    "capture_page": "toolkit.pages.capture",
    "capture_pages": "toolkit.pages.capture",
    "cited_urls": "toolkit.pages.citations",
    "cited_urls_in": "toolkit.pages.citations",
    "content_hash": "toolkit.pages.store",
    "default_chromium": "toolkit.pages.capture",
    "import_m2w2": "toolkit.pages.m2w2",
    "looks_like_pdf": "toolkit.pages.pdf",
    "m2w2_address": "toolkit.pages.m2w2",
    "m2w2_file_stem": "toolkit.pages.m2w2",
    "m2w2_storage_key": "toolkit.pages.m2w2",
    "pdf_text": "toolkit.pages.pdf",
    "require_chromium": "toolkit.pages.capture",
}

__all__ = [
    "CHROMIUM_ARGS",
    "DEFAULT_CHROMIUM",
    "CaptureOptions",
    "CaptureOutcome",
    "CaptureReport",
    "ImportProblem",
    "ImportReport",
    "PageRecord",
    "PageStore",
    "PdfTextError",
    "answer_files",
    "answer_texts",
    "capture_page",
    "capture_pages",
    "cited_urls",
    "cited_urls_in",
    "content_hash",
    "default_chromium",
    "import_m2w2",
    "looks_like_pdf",
    "m2w2_address",
    "m2w2_file_stem",
    "m2w2_storage_key",
    "pdf_text",
    "require_chromium",
]


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
