"""`judgegen cache-pages --ray`: pages captured on the cluster's nodes, stored in one store."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.scale.local_cluster import LocalCluster
from tests.scale.workspace import judgegen
from toolkit.pages import PageStore, default_chromium

pytestmark = pytest.mark.timeout(240)
PAGES = 8


class Handler(BaseHTTPRequestHandler):
    """`/page/N` is a page saying fact N; anything else is a 404."""

    def do_GET(self) -> None:
        number = self.path.removeprefix("/page/")
        found = self.path.startswith("/page/") and number.isdigit()
        body = f"<html><body><p>Fact number {number}.</p></body></html>".encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def captured(
    server: str, cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Any, str]:
    work = tmp_path_factory.mktemp("capture")
    answer = work / "answers" / "agent" / "task" / "answer_1.md"
    answer.parent.mkdir(parents=True)
    cited = [f"{server}/page/{n}" for n in range(PAGES)] + [f"{server}/gone"]
    answer.write_text(" ".join(f"See {url}." for url in cited))
    args = ["cache-pages", "--answers", "answers", "--store", "pages", "--concurrency", "2"]
    args += ["--chromium", default_chromium(), "--timeout", "20", "--json"]
    done = judgegen(work, *args, "--ray", cluster.address)
    return work, done, server


def test_every_cited_page_lands_in_the_one_page_store(captured: tuple[Path, Any, str]) -> None:
    work, done, server = captured
    report = json.loads(done.stdout)["capture"]
    assert (report["captured"], report["failed"]) == (PAGES, 1)
    with PageStore(work / "pages", readonly=True) as store:
        for n in range(PAGES):
            assert f"Fact number {n}." in (store.get(f"{server}/page/{n}") or "")
        failure = store.lookup(f"{server}/gone")
        assert failure is not None and failure.error_kind == "http" and failure.http_status == 404


def test_the_captures_are_spread_over_the_nodes(captured: tuple[Path, Any, str]) -> None:
    _, done, _ = captured
    line = next(x for x in done.stderr.splitlines() if x.startswith("Ray:"))
    per_node = [int(n) for n in line.rsplit(":", 1)[1].split(",")]
    assert len(per_node) >= 2 and all(per_node) and sum(per_node) == PAGES + 1


def test_a_failed_page_makes_the_exit_code_1_as_locally(captured: tuple[Path, Any, str]) -> None:
    assert captured[1].returncode == 1
