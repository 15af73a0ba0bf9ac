"""`judgegen cache-pages --ray`: pages captured on the cluster's nodes, stored here.

Each node captures with its own Chromium (kept warm for the run); every record comes back to
the driver, which alone writes the one page store, as a local capture does. A capture whose
node was lost is retried on another node, then recorded as a `browser` failure (tried again
on the next run).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from toolkit.pages.capture import CaptureOptions, CaptureReport, ProgressFn, capture_pages
from toolkit.pages.store import PageRecord, PageStore
from toolkit.scale.cluster import cluster_session
from toolkit.scale.errors import ClusterError
from toolkit.scale.nodes import DEFAULT_ATTEMPTS


async def capture_on_cluster(
    urls: Iterable[str],
    store: PageStore,
    options: CaptureOptions,
    *,
    address: str,
    refresh: bool = False,
    progress: ProgressFn | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
) -> tuple[CaptureReport, str]:
    """Capture the URLs not stored yet on the cluster at `address`, `options.concurrency` pages
    at a time on each node, into `store`; the report and the cluster's line (pages per node)."""
    async with cluster_session(address) as session:
        nodes = await session.start_runners(attempts=attempts)
        try:

            async def on_a_node(url: str) -> PageRecord:
                try:
                    record: PageRecord = await nodes.call("capture", url, options, what=url)
                except ClusterError as exc:
                    return PageRecord.failure(url, "browser", str(exc))
                return record

            total = replace(options, concurrency=options.concurrency * len(nodes.runners))
            report = await capture_pages(
                urls, store, total, refresh=refresh, progress=progress, capture=on_a_node
            )
            return report, nodes.line("pages")
        finally:
            await session.stop_runners(nodes)
