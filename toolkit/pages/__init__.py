"""Cited pages: the offline page store, capture and Mind2Web 2 import (URLs: `toolkit.urls`).

`PageStore` is the Evaluator's page source; `capture_pages` fills it with the system Chromium
(Playwright is imported only when a capture runs); `import_m2w2` fills it from a Mind2Web 2
page cache. A failed capture is recorded as a failure, never served as page text.
"""

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
from toolkit.pages.citations import answer_files, cited_urls
from toolkit.pages.m2w2 import (
    ImportProblem,
    ImportReport,
    import_m2w2,
    m2w2_file_stem,
    m2w2_storage_key,
)
from toolkit.pages.pdf import PdfTextError, looks_like_pdf, pdf_text
from toolkit.pages.store import PageRecord, PageStore, content_hash

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
    "capture_page",
    "capture_pages",
    "cited_urls",
    "content_hash",
    "default_chromium",
    "import_m2w2",
    "looks_like_pdf",
    "m2w2_file_stem",
    "m2w2_storage_key",
    "pdf_text",
    "require_chromium",
]
