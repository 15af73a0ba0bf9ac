"""`cache-pages` against a loopback server, with the system Chromium (one capture run, shared)."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import cache_pages, main
from tests.pages.pdfs import build_pdf
from toolkit.errors import InfraError
from toolkit.pages import PageRecord, PageStore, capture, default_chromium
from toolkit.pages.capture import (
    NOTHING_RENDERED,
    CaptureOptions,
    CaptureOutcome,
    capture_pages,
)
from toolkit.pages.store import INFRA_FAILURES, FailureKind
from toolkit.urls import extract_urls

pytestmark = pytest.mark.timeout(120)

STATIC_HTML = b"<html><body><h1>Static facts</h1><p>The capital is Paris.</p></body></html>"
JS_HTML = b"""<html><body><p>Loading</p><div id="out"></div><script>
setTimeout(function () {
  fetch('/data.json').then(function (r) { return r.json(); }).then(function (d) {
    document.getElementById('out').innerText = d.message;
  });
}, 200);
</script></body></html>"""
BLANK_HTML = b"<html><body></body></html>"
CHALLENGE_HTML = (
    b"<html><head><title>Just a moment...</title></head><body><h1>Just a moment...</h1>"
    b"<p>Enable JavaScript and cookies to continue</p></body></html>"
)  # a bot check, served with HTTP 200 as Cloudflare's is
TALL_HTML = b'<html><body><p>Tall top</p><div style="height:20000px"></div></body></html>'
BROKEN_APP_HTML = b"""<html><body><div id="root"></div><script>
throw new Error('bundle failed to load');
</script></body></html>"""  # a single-page app whose script failed: nothing rendered


def navigating_on_read(result: str, target: str) -> bytes:
    """A page that JS-redirects to `target` just as its text is read (the race of a redirect
    timed as the network-idle wait ends, made certain): reading `innerText` starts the
    navigation and gives `result`, a JS expression."""
    return (
        "<html><body><p>Interstitial text</p><script>"
        "Object.defineProperty(document.body, 'innerText', {get: function () {"
        f"location.href = {target}; return {result}; }}}});"
        "</script></body></html>"
    ).encode()


HOP_ON_READ_HTML = navigating_on_read("'Interstitial text'", "'/static'")
HOP_WHILE_READ_HTML = navigating_on_read("new Promise(function () {})", "'/static'")
# each read destroys the context it runs in, and the next page does the same
LOOP_HTML = navigating_on_read("new Promise(function () {})", "'/loop?' + Date.now()")
SHADOW_ONLY_HTML = b"""<html><body><report-card></report-card><script>
customElements.define("report-card", class extends HTMLElement {
  connectedCallback() {
    const root = this.attachShadow({mode: "open"});
    root.innerHTML = "<style>p { color: red }</style><p>Revenue grew 12 percent in 2024.</p>";
  }
});
</script></body></html>"""
FRAME_ONLY_HTML = b'<html><body><iframe src="/static"></iframe></body></html>'
LATE_HTML = """<html><body><div id="app">Loading…</div><script>
setTimeout(function () {
  document.getElementById("app").innerHTML =
    "<h1>Late facts</h1><p>The river is 410 km long.</p><div style='height:3000px'></div>";
}, 1200);
</script></body></html>""".encode()  # rendered by a timer after network idle, no request
APPENDING_HTML = b"""<html><body><h1>Streaming report</h1>
<p>This report is written out part by part by the page's own script, after it has loaded.</p>
<div id="parts"></div><script>
var part = 0;
var timer = setInterval(function () {
  part += 1;
  var p = document.createElement("p");
  p.textContent = "Part " + part + " of 60";
  document.getElementById("parts").appendChild(p);
  if (part === 60) clearInterval(timer);
}, 20);
</script></body></html>"""  # still being appended when network idle ends
LATE_WITH_CLOCK_HTML = """<html><body><p id="clock">Tick 0</p><div id="app">Loading…</div>
<script>
var ticks = 0;
setInterval(function () {
  ticks += 1;
  document.getElementById("clock").textContent = "Tick " + ticks;
}, 100);
setTimeout(function () {
  document.getElementById("app").textContent = "The bridge opened in 1932.";
}, 1200);
</script></body></html>""".encode()  # late content beside a clock that never stops
LOGIN_HTML = b"""<html><body><h1>Sign in</h1><form><input name="user"><input name="pass" type="password">
<button>Sign in</button></form><p>New here? Join now to see the profile.</p></body></html>"""
SCRIPT_TO_LOGIN_HTML = b"""<html><body>Loading the profile...<script>
location.replace("/uas/login?session_redirect=%2Fprofile");
</script></body></html>"""  # a members-only page sending the browser on by script
HASH_ROUTED_HTML = b"""<html><body><div id="view"></div><script>
var views = {"#/pricing": "Pro plan: 10 dollars a month", "#!/about": "Founded in 2019"};
document.getElementById("view").innerText = views[location.hash] || "Welcome to the app";
</script></body></html>"""  # a single-page app routing by the URL's #fragment
HOME_HTML = b"""<html><body><h1>Example News</h1><p>Top stories today: markets rally, and the
weather turns cold.</p></body></html>"""  # a site's home page, where removed pages are sent
SCRIPT_TO_HOME_HTML = b"""<html><body>This story is no longer available.<script>
location.replace("/en/");
</script></body></html>"""  # a removed page sending the browser home by script
FACT = "The dam was finished in 1936."
MENUS = "<nav>" + " ".join(f"<a href='/s{i}'>Section {i}</a>" for i in range(12)) + "</nav>"


def beside_menus(body: str, head: str = "") -> bytes:
    """A page whose menus show at once (more than a placeholder's text) beside `body`."""
    return f"<html><head>{head}</head><body>{MENUS}{body}</body></html>".encode()


def drawn_by(script: str) -> bytes:
    """A page beside its menus whose article element `#main` is filled in by `script`."""
    return beside_menus(f"<main id='main'>Loading…</main><script>{script}</script>")


FILL_MAIN = f"document.getElementById('main').textContent = {FACT!r};"
TIMER_DRAWN_HTML = drawn_by(f"setTimeout(function () {{ {FILL_MAIN} }}, 3500);")
SLOW_FETCH_HTML = drawn_by(
    "fetch('/slow.json').then(function (r) { return r.json(); }).then(function (d) {"
    " document.getElementById('main').textContent = d.fact; });"
)  # its data answers after network idle has been given up on
TIMER_TO_SIGN_IN_HTML = beside_menus(
    "Loading your profile…<script>setTimeout(function () {"
    " location.href = '/accounts/login'; }, 3500);</script>"
)
REFRESH_LATER_HTML = beside_menus(
    "This page has moved.", "<meta http-equiv='refresh' content='4; url=/static'>"
)
LAZY_SECTION_HTML = beside_menus(
    "<div style='height:3000px'>Intro</div><section id='late'></section><script>"
    "new IntersectionObserver(function (seen) { if (seen[0].isIntersecting)"
    f" document.getElementById('late').textContent = {FACT!r}; }})"
    ".observe(document.getElementById('late'));</script>"
)  # filled in only once scrolled into view
ENDLESS_LIST_HTML = beside_menus(
    "<ul id='items'></ul><p id='more'>More…</p><script>var shown = 0;"
    "function more() { for (var i = 0; i < 20 && shown < 160; i++) { shown += 1;"
    " var item = document.createElement('li'); item.style.height = '60px';"
    f" item.textContent = shown === 150 ? {FACT!r} : 'Item ' + shown;"
    " document.getElementById('items').appendChild(item); } }"
    "more(); new IntersectionObserver(function (seen) {"
    " if (seen[0].isIntersecting) setTimeout(more, 50); })"
    ".observe(document.getElementById('more'));</script>"
)  # twenty items at a time as its end comes into view; the 150th is 9000 px down, of 160
LATE_LIST_HTML = ENDLESS_LIST_HTML.replace(
    b"setTimeout(more, 50)",
    b"requestAnimationFrame(function () { requestAnimationFrame(function () {"
    b" requestAnimationFrame(function () { setTimeout(more, 50); }); }); })",
)  # the same list, whose observer asks for more three frames after it saw the end (as a
# busy renderer runs an observer's report late): a look of two frames finds nothing due
DETAILS_HTML = beside_menus(f"<details><summary>History</summary><p>{FACT}</p></details>")
TABS_HTML = beside_menus(
    "<div role='tablist'><button>Overview</button><button>History</button></div>"
    f"<div role='tabpanel'>A dam on the river.</div><div role='tabpanel' hidden>{FACT}</div>"
)
SKIPPED_SECTION_HTML = beside_menus(
    f"<div style='height:3000px'>Intro</div><section style='content-visibility:auto'>{FACT}"
    "</section>"
)  # not drawn until it comes into view, and `innerText` leaves out what is not drawn
FRAMED_ARTICLE_HTML = f"<html><body><p>{FACT}</p></body></html>".encode()
COMPONENT_HTML = beside_menus(
    "<dam-facts></dam-facts><script>customElements.define('dam-facts', class extends"
    " HTMLElement { connectedCallback() { this.attachShadow({mode: 'open'}).innerHTML ="
    f" '<p>{FACT}</p>'; }} }});</script>"
)
SLOTTED_HTML = beside_menus(
    f"<dam-card><p>{FACT}</p></dam-card><script>customElements.define('dam-card', class"
    " extends HTMLElement { connectedCallback() { this.attachShadow({mode: 'open'}).innerHTML"
    " = '<div><slot></slot></div>'; } });</script>"
)  # the page's own text, shown through a shadow root's slot
SHOW_ARTICLE = "document.querySelector('main, article').style.display = 'block';"
CLOSE_DIALOG = "document.getElementById('dialog').remove();"
TRACKING = "document.body.insertAdjacentHTML('beforeend', '<p>Personalised ads on</p>');"
"""What the fixture pages' consent buttons do: show the article held back, close the dialog,
and (Accept, where the page offers a refusal too) say that the visitor was tracked."""


def consent_wall_page(buttons: str, head: str = "") -> bytes:
    """A page beside its menus whose article is hidden until its consent dialog, holding
    `buttons`, is answered."""
    return beside_menus(
        f"<main style='display:none'>{FACT}</main><div id='dialog'>We use cookies to"
        f" improve your experience and to show personalised ads. {buttons}</div>",
        head,
    )


def consent_button(label: str, script: str = "", **attributes: str) -> str:
    """A button of a consent dialog that runs `script` when pressed."""
    extra = "".join(f" {name}='{value}'" for name, value in attributes.items())
    return f'<button onclick="{script}"{extra}>{label}</button>'


ANSWERED = SHOW_ARTICLE + CLOSE_DIALOG
CONSENT_FIRST_HTML = consent_wall_page(consent_button("Accept all", ANSWERED))
"""The article stays hidden until a visitor accepts cookies: the dialog offers nothing else."""
CONSENT_REJECTABLE_HTML = consent_wall_page(
    consent_button("Accept all", ANSWERED + TRACKING)
    + consent_button("Manage preferences")
    + consent_button("Reject all", ANSWERED)
)
CONSENT_STUCK_HTML = consent_wall_page(consent_button("Reject all") + consent_button("Accept all"))
"""A dialog whose buttons never let the article through (the page would need a script the
capture host does not run, a region it is not in, ...)."""
GERMAN_WALL_HTML = beside_menus(
    f"<main style='display:none'>{FACT}</main><div id='dialog'>Wir verwenden Cookies, um"
    " Inhalte zu personalisieren und Zugriffe zu analysieren."
    + consent_button("Alle akzeptieren", ANSWERED + TRACKING)
    + consent_button("Alle ablehnen", ANSWERED)
    + "</div>"
)
ARTICLE = " ".join(
    f"{FACT} The reservoir behind it holds {n} cubic kilometres of water." for n in range(10)
)
TOOL_WALL_HTML = (
    "<html><body><div class='menu'>"
    + " ".join(f"<a href='/s{i}'>Section {i}</a>" for i in range(60))
    + f"</div><article style='display:none'>{ARTICLE}</article>"
    "<div id='onetrust-consent-sdk'><div id='onetrust-banner-sdk'>Wij en onze partners"
    " gebruiken cookies."
    + consent_button("Ja, prima", ANSWERED + TRACKING, id="onetrust-accept-btn-handler")
    + consent_button("Nee, bedankt", ANSWERED, id="onetrust-reject-all-handler")
    + "</div></div></body></html>"
).encode()
"""A consent tool's dialog (OneTrust's markup) in Dutch, with labels no rule knows, beside
long menus that are no landmark: the tool's own buttons, and the article it holds back, tell."""
FRAMED_WALL_HTML = beside_menus(
    f"<main style='display:none'>{FACT}</main><iframe id='dialog' src='/consent-frame'"
    " style='position:fixed; bottom:0; width:100%; height:200px'></iframe><script>"
    "window.addEventListener('message', function (e) {"
    f" {ANSWERED} if (e.data === 'accepted') {{ {TRACKING} }} }});</script>"
)
CONSENT_FRAME_HTML = (
    "<html><body><p>We and our partners store cookies on your device.</p>"
    + consent_button("Accept", "parent.postMessage('accepted', '*')")
    + consent_button("Reject all", "parent.postMessage('rejected', '*')")
    + "</body></html>"
).encode()
"""A consent tool drawing its dialog in a frame (as Sourcepoint does), which tells the page."""
COOKIE_NOTICE_HTML = beside_menus(
    f"<main><p>{ARTICLE}</p></main><div style='position:fixed; bottom:0'>This site uses"
    " cookies. " + consent_button("Accept", TRACKING) + "</div>"
)
"""A notice at the bottom of the page that hides nothing."""
SOFT_404_HTML = beside_menus(
    "<main><h1>Sorry, we couldn't find that page</h1><p>It may have been moved or deleted."
    " Try the search above, or start again from the home page.</p></main>",
    "<title>Page not found | Example News</title>",
)  # a removed article answered with HTTP 200
GERMAN_SOFT_404_HTML = beside_menus(
    "<main><h1>Diese Seite existiert nicht</h1><p>Vielleicht wurde sie verschoben oder"
    " gelöscht. Nutzen Sie die Suche oder gehen Sie zur Startseite.</p></main>",
    "<title>Seite nicht gefunden – Beispiel</title>",
)
ERROR_PAGE_HTML = beside_menus(
    "<main><p>We looked everywhere for it. Try the search above.</p></main>",
    "<title>Example News</title>",
)  # the site's error page, at /404, wording nothing a rule knows (HTTP 200)
SEARCH_PAGE_HTML = beside_menus(
    "<main><h1>Search</h1><p>Results for widget 9: Widget 8, Widget 10.</p></main>",
    "<title>Search | Example Shop</title>",
)
HTTP_ERRORS_HTML = beside_menus(
    "<article><h1>404 Not Found</h1>"
    + "".join(
        f"<p>Status {code}: a server answers it when the resource is {what}; a browser shows"
        " the page the server sends with it, and a crawler drops the address from its index"
        " once it has seen the status several times in a row.</p>"
        for code, what in [(404, "missing"), (410, "gone for good"), (403, "forbidden")] * 4
    )
    + "</article>",
    "<title>404 Not Found: what it means | Web Guide</title>",
)  # a long article about HTTP errors, titled and headed as a not-found page is
ERROR_CODES_HTML = beside_menus(
    "<main><h1>Error Correction Codes</h1><p>Reed-Solomon codes correct burst errors on"
    " CDs and QR codes.</p></main>",
    "<title>Error Correction Codes | Coding Notes</title>",
)  # short, and named "Error"
NOT_FOUND_PATHS = {
    "/gone-article": "not_found",
    "/verschwunden": "not_found",
    "/old": "not_found",
    "/products/widget-9": "not_found",
    "/http-errors": None,
    "/error-correction": None,
}
"""Pages a site answers with HTTP 200, by path, and the failure each is (None: a page)."""
REDIRECTS = {
    "/members": "/accounts/login?next=%2Fmembers",  # a members-only page: sent on to sign in
    "/news/2023/some-article": "/",  # a removed article: sent to the home page
    "/old-article": "/home",
    "/index.html": "/",  # a home page's other address
    "/moved-article": "/static",  # an article moved to a new address
    "/removed-story": "/?from=404",  # a removed page sent home with a marker
    "/old": "/404",  # a removed page sent to the site's error page
    "/products/widget-9": "/search?q=widget+9",  # a removed product sent to a search for it
}
SHORT_LINKS = {  # cited at localhost, they send the browser to 127.0.0.1: another site
    "/x7Kq2A": "/",  # a short link to the site's home page
    "/r4Nd0m9": "/news/2023/some-article",  # one to an article since removed
}
CAPTURE_TIMEOUT_S = 15
MAX_SCREENSHOT_HEIGHT = 8000  # CaptureOptions' default cap


def build_png(width: int = 40, height: int = 30) -> bytes:
    """A small solid red PNG (an image cited as a page)."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(tag + data))
        return struct.pack(">I", len(data)) + tag + data + crc

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def make_handler(pdf: bytes, release: threading.Event) -> type[BaseHTTPRequestHandler]:
    routes: dict[str, tuple[int, str, bytes]] = {
        "/static": (200, "text/html; charset=utf-8", STATIC_HTML),
        "/js": (200, "text/html; charset=utf-8", JS_HTML),
        "/tall": (200, "text/html; charset=utf-8", TALL_HTML),
        "/data.json": (200, "application/json", b'{"message": "Rendered by script 42"}'),
        "/paper.pdf": (200, "application/pdf", pdf),
        "/download": (200, "application/octet-stream", pdf),
        "/scan.pdf": (200, "application/pdf", build_pdf("")),  # no text layer, as if scanned
        "/blank": (200, "text/html; charset=utf-8", BLANK_HTML),
        "/broken-app": (200, "text/html; charset=utf-8", BROKEN_APP_HTML),
        "/pdf-as-html": (200, "text/html; charset=utf-8", pdf),  # a misconfigured server
        "/chart.png": (200, "image/png", build_png()),
        "/hop-on-read": (200, "text/html; charset=utf-8", HOP_ON_READ_HTML),
        "/hop-while-read": (200, "text/html; charset=utf-8", HOP_WHILE_READ_HTML),
        "/loop": (200, "text/html; charset=utf-8", LOOP_HTML),
        "/challenge": (200, "text/html; charset=utf-8", CHALLENGE_HTML),
        "/shadow-only": (200, "text/html; charset=utf-8", SHADOW_ONLY_HTML),
        "/frame-only": (200, "text/html; charset=utf-8", FRAME_ONLY_HTML),
        "/late": (200, "text/html; charset=utf-8", LATE_HTML),
        "/appending": (200, "text/html; charset=utf-8", APPENDING_HTML),
        "/late-with-clock": (200, "text/html; charset=utf-8", LATE_WITH_CLOCK_HTML),
        "/app": (200, "text/html; charset=utf-8", HASH_ROUTED_HTML),
        "/accounts/login": (200, "text/html; charset=utf-8", LOGIN_HTML),
        "/uas/login": (200, "text/html; charset=utf-8", LOGIN_HTML),
        "/profile": (200, "text/html; charset=utf-8", SCRIPT_TO_LOGIN_HTML),
        "/missing": (404, "text/html", b"<html><body>Not Found page text</body></html>"),
        "/": (200, "text/html; charset=utf-8", HOME_HTML),
        "/home": (200, "text/html; charset=utf-8", HOME_HTML),
        "/en/": (200, "text/html; charset=utf-8", HOME_HTML),
        "/gone-by-script": (200, "text/html; charset=utf-8", SCRIPT_TO_HOME_HTML),
        "/timer-drawn": (200, "text/html; charset=utf-8", TIMER_DRAWN_HTML),
        "/slow-fetch": (200, "text/html; charset=utf-8", SLOW_FETCH_HTML),
        "/timer-to-sign-in": (200, "text/html; charset=utf-8", TIMER_TO_SIGN_IN_HTML),
        "/refresh-later": (200, "text/html; charset=utf-8", REFRESH_LATER_HTML),
        "/lazy-section": (200, "text/html; charset=utf-8", LAZY_SECTION_HTML),
        "/endless-list": (200, "text/html; charset=utf-8", ENDLESS_LIST_HTML),
        "/late-list": (200, "text/html; charset=utf-8", LATE_LIST_HTML),
        "/details": (200, "text/html; charset=utf-8", DETAILS_HTML),
        "/tabs": (200, "text/html; charset=utf-8", TABS_HTML),
        "/skipped-section": (200, "text/html; charset=utf-8", SKIPPED_SECTION_HTML),
        "/article": (200, "text/html; charset=utf-8", FRAMED_ARTICLE_HTML),
        "/component": (200, "text/html; charset=utf-8", COMPONENT_HTML),
        "/slotted": (200, "text/html; charset=utf-8", SLOTTED_HTML),
        "/consent-first": (200, "text/html; charset=utf-8", CONSENT_FIRST_HTML),
        "/consent-rejectable": (200, "text/html; charset=utf-8", CONSENT_REJECTABLE_HTML),
        "/consent-stuck": (200, "text/html; charset=utf-8", CONSENT_STUCK_HTML),
        "/consent-german": (200, "text/html; charset=utf-8", GERMAN_WALL_HTML),
        "/consent-tool": (200, "text/html; charset=utf-8", TOOL_WALL_HTML),
        "/consent-framed": (200, "text/html; charset=utf-8", FRAMED_WALL_HTML),
        "/consent-frame": (200, "text/html; charset=utf-8", CONSENT_FRAME_HTML),
        "/cookie-notice": (200, "text/html; charset=utf-8", COOKIE_NOTICE_HTML),
        "/gone-article": (200, "text/html; charset=utf-8", SOFT_404_HTML),
        "/verschwunden": (200, "text/html; charset=utf-8", GERMAN_SOFT_404_HTML),
        "/404": (200, "text/html; charset=utf-8", ERROR_PAGE_HTML),
        "/search": (200, "text/html; charset=utf-8", SEARCH_PAGE_HTML),
        "/http-errors": (200, "text/html; charset=utf-8", HTTP_ERRORS_HTML),
        "/error-correction": (200, "text/html; charset=utf-8", ERROR_CODES_HTML),
    }
    asked: dict[str, int] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/hang":
                release.wait(30)
                return
            asked[self.path] = asked.get(self.path, 0) + 1
            if self.path == "/slow.json":
                time.sleep(4)
                self.reply(200, "application/json", json.dumps({"fact": FACT}).encode())
                return
            if self.path in ("/framed", "/framed-elsewhere"):
                port = self.server.server_address[1]
                host = "127.0.0.1" if self.path == "/framed" else "localhost"  # another site
                frame = f"<iframe src='http://{host}:{port}/article'></iframe>"
                self.reply(200, "text/html; charset=utf-8", beside_menus(frame))
                return
            if self.path == "/busy" or (self.path == "/busy-once" and asked[self.path] == 1):
                page = b"<html><body>Too many requests</body></html>"
                self.reply(429, "text/html", page, ("Retry-After", "1"))
                return
            if self.path == "/busy-once":
                self.reply(200, "text/html; charset=utf-8", beside_menus(f"<p>{FACT}</p>"))
                return
            if self.path in SHORT_LINKS:
                self.send_response(301)
                port = self.server.server_address[1]
                self.send_header("Location", f"http://127.0.0.1:{port}{SHORT_LINKS[self.path]}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if self.path in REDIRECTS:
                self.send_response(301 if self.path != "/members" else 302)
                self.send_header("Location", REDIRECTS[self.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            path = "/loop" if self.path.startswith("/loop") else self.path.split("?")[0]
            self.reply(*routes.get(path, (404, "text/plain", b"no")))

        def reply(
            self, status: int, content_type: str, body: bytes, *header: tuple[str, str]
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in header:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    release = threading.Event()
    httpd = ThreadingHTTPServer(
        ("127.0.0.1", 0), make_handler(build_pdf("Quarterly revenue was 7 million"), release)
    )
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    release.set()
    httpd.shutdown()
    httpd.server_close()


@dataclass
class CaptureRun:
    base: str
    store_dir: Path
    exit_code: int
    report: dict[str, Any]
    stderr: str

    def url(self, path: str) -> str:
        return self.base + path

    def outcome(self, path: str) -> dict[str, Any]:
        return next(o for o in self.report["outcomes"] if o["url"] == self.url(path))


def write_answers(root: Path, base: str) -> Path:
    answers = root / "answers"
    first = answers / "agent_a" / "task_1" / "answer_1.md"
    second = answers / "agent_a" / "task_2" / "answer_1.md"
    first.parent.mkdir(parents=True)
    second.parent.mkdir(parents=True)
    first.write_text(
        f"Paris is the capital ([source]({base}/static#capital)). The script says so: "
        f"<{base}/js>. Revenue: {base}/paper.pdf.",
        encoding="utf-8",
    )
    second.write_text(
        f"See {base}/missing and **{base}/hang**, also {base}/download and {base}/static. "
        f"Scanned: {base}/scan.pdf. "
        f"Long read: {base}/tall. Behind a bot check: {base}/challenge. "
        f"Blank: {base}/blank, an app that failed: {base}/broken-app, "
        f"a PDF served as HTML: {base}/pdf-as-html, a chart: {base}/chart.png",
        encoding="utf-8",
    )
    return answers


def invoke(args: list[str]) -> Any:
    return CliRunner().invoke(main, ["cache-pages", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def run(server: str, tmp_path_factory: pytest.TempPathFactory) -> CaptureRun:
    root = tmp_path_factory.mktemp("capture")
    answers = write_answers(root, server)
    store_dir = root / "store"
    result = invoke(
        [
            "--answers",
            str(answers),
            "--store",
            str(store_dir),
            "--timeout",
            str(CAPTURE_TIMEOUT_S),
            "--concurrency",
            "3",
            "--chromium",
            default_chromium(),
            "--json",
        ]
    )
    report = json.loads(result.stdout)["capture"]
    return CaptureRun(server, store_dir, result.exit_code, report, result.stderr)


def read(run: CaptureRun, fn: Callable[[PageStore], Any]) -> Any:
    with PageStore(run.store_dir, readonly=True) as store:
        return fn(store)


def test_static_page_text_is_stored(run: CaptureRun) -> None:
    text = read(run, lambda s: s.get(run.url("/static")))
    assert "The capital is Paris." in text


def test_static_page_screenshot_is_a_jpeg(run: CaptureRun) -> None:
    shot = read(run, lambda s: s.screenshot(run.url("/static")))
    assert base64.b64decode(shot)[:3] == b"\xff\xd8\xff"


def jpeg_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a JPEG's start-of-frame segment."""
    at = 2
    while at < len(data):
        marker, length = data[at + 1], int.from_bytes(data[at + 2 : at + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            height = int.from_bytes(data[at + 5 : at + 7], "big")
            return int.from_bytes(data[at + 7 : at + 9], "big"), height
        at += 2 + length
    raise ValueError("no start-of-frame segment")


def test_tall_page_screenshot_is_cut_at_the_height_cap(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/tall")))
    assert jpeg_size(record.screenshot) == (1280, MAX_SCREENSHOT_HEIGHT)
    assert "Tall top" in record.text


def test_javascript_rendered_text_is_stored(run: CaptureRun) -> None:
    text = read(run, lambda s: s.get(run.url("/js")))
    assert "Rendered by script 42" in text


def test_pdf_is_stored_as_bytes_with_extracted_text(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/paper.pdf")))
    assert (record.kind, record.http_status) == ("pdf", 200)
    assert record.pdf.startswith(b"%PDF-")
    assert "Quarterly revenue was 7 million" in record.text


def test_pdf_served_as_download_is_recognized_by_magic_bytes(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/download")))
    assert record.kind == "pdf" and "Quarterly revenue" in record.text


def test_a_pdf_without_text_is_recorded_as_a_failure_not_an_empty_page(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/scan.pdf")))
    assert (record.status, record.error_kind) == ("failed", "pdf")
    assert "no text layer" in record.error
    assert read(run, lambda s: s.get(run.url("/scan.pdf"))) is None  # cited, it is missing


def test_a_page_with_no_text_that_cannot_be_drawn_is_a_failure(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def undrawable(*args: Any) -> None:
        return None

    monkeypatch.setattr(capture, "_screenshot", undrawable)
    answers = tmp_path / "a.md"
    answers.write_text(f"{server}/blank and {server}/static", encoding="utf-8")
    store_dir = tmp_path / "store"
    args = ["--answers", str(answers), "--store", str(store_dir), "--chromium", default_chromium()]
    assert invoke(args).exit_code == 1
    with PageStore(store_dir, readonly=True) as store:
        blank, static = store.lookup(f"{server}/blank"), store.lookup(f"{server}/static")
    assert (blank.status, blank.error_kind, blank.error) == ("failed", "empty", NOTHING_RENDERED)
    assert static.ok and static.screenshot is None  # its text is still there to judge


def test_a_blank_page_is_a_failure_even_though_it_can_be_drawn(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/blank")))
    assert (record.status, record.error_kind, record.error) == ("failed", "empty", NOTHING_RENDERED)
    assert not read(run, lambda s: s.has_page(run.url("/blank")))  # tried again next time


def test_an_app_whose_script_failed_to_render_is_a_failure(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/broken-app")))
    assert (record.status, record.error_kind) == ("failed", "empty")
    assert read(run, lambda s: s.get(run.url("/broken-app"))) is None  # cited, it is missing


def test_an_image_is_stored_as_its_screenshot_though_it_shows_no_text(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/chart.png")))
    assert (record.status, record.kind, record.text) == ("ok", "web", "")
    assert record.screenshot[:3] == b"\xff\xd8\xff"


def test_a_pdf_served_as_html_is_stored_as_a_pdf(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/pdf-as-html")))
    assert (record.status, record.kind, record.content_type) == (
        "ok",
        "pdf",
        "text/html; charset=utf-8",
    )
    assert "Quarterly revenue was 7 million" in record.text


def test_a_bot_check_served_instead_of_the_page_is_a_failure(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/challenge")))
    assert (record.status, record.error_kind, record.http_status) == ("failed", "blocked", 200)
    assert "bot check" in record.error and "enable javascript and cookies" in record.error
    assert read(run, lambda s: s.get(run.url("/challenge"))) is None  # cited, it is missing
    assert not read(run, lambda s: s.has_page(run.url("/challenge")))  # tried again next time


def test_http_404_is_recorded_as_failure_not_page(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/missing")))
    assert (record.status, record.error_kind, record.http_status) == ("failed", "http", 404)
    assert read(run, lambda s: s.get(run.url("/missing"))) is None


def test_hanging_page_is_recorded_as_timeout(run: CaptureRun) -> None:
    record = read(run, lambda s: s.lookup(run.url("/hang")))
    assert (record.status, record.error_kind) == ("failed", "timeout")
    assert read(run, lambda s: s.get(run.url("/hang"))) is None


def test_each_cited_url_is_captured_once(run: CaptureRun) -> None:
    urls = [o["url"] for o in run.report["outcomes"]]
    assert len(urls) == len(set(urls)) == 13


def test_report_counts_and_exit_code_show_the_failures(run: CaptureRun) -> None:
    counts = (run.report["captured"], run.report["failed"], run.report["skipped"])
    assert counts == (7, 6, 0)
    assert run.exit_code == 1


def test_progress_goes_to_stderr(run: CaptureRun) -> None:
    assert "[13/13]" in run.stderr


def test_rerun_skips_stored_pages_without_a_browser(run: CaptureRun, tmp_path: Path) -> None:
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / "a.md").write_text(f"{run.base}/static and {run.base}/paper.pdf", encoding="utf-8")
    result = invoke(
        ["--answers", str(answers), "--store", str(run.store_dir), "--chromium", "/nonexistent"]
    )
    assert result.exit_code == 0
    assert "captured 0, failed 0, skipped 2" in result.stdout


def write_trajectory(run_dir: Path, task: str, final_answer: str) -> None:
    folder = run_dir / "traj" / task
    folder.mkdir(parents=True)
    record = {"final_answer": final_answer, "is_aborted": False}
    (folder / f"{task}_final_answer.json").write_text(json.dumps(record), encoding="utf-8")


def test_a_webeval_runs_final_answers_are_read_for_the_pages_they_cite(tmp_path: Path) -> None:
    """`run --trajectories` judges each trajectory's `final_answer`: its cited pages must be
    in the store, or every one is judged missing (unsupported) and the score file says 0."""
    store_dir, base = tmp_path / "store", "https://facts.example"
    with PageStore(store_dir) as store:
        for path in ("/a", "/b"):
            store.put(PageRecord.web(f"{base}{path}", "Stored facts", None))
    # the file holds the line break escaped: read as its text, `{base}/a\\nand` is the URL found
    write_trajectory(tmp_path / "run", "t1", f"See {base}/a\nand {base}/b.")
    args = ["--trajectories", str(tmp_path / "run"), "--store", str(store_dir)]
    result = invoke([*args, "--chromium", "/nonexistent"])
    assert result.exit_code == 0, result.output
    assert "2 URL(s) cited in 1 trajectory final answer(s)" in result.stderr
    assert "captured 0, failed 0, skipped 2" in result.stdout


def test_answers_pointing_at_a_webeval_run_is_a_usage_error_naming_trajectories(
    tmp_path: Path,
) -> None:
    """It found no .md answer to read, captured nothing and exited 0."""
    write_trajectory(tmp_path / "run", "t1", "See https://facts.example/a.")
    result = invoke(["--answers", str(tmp_path / "run"), "--store", str(tmp_path / "store")])
    assert result.exit_code == 2
    assert f"use --trajectories {tmp_path / 'run'}" in result.output


def test_missing_chromium_is_an_infrastructure_failure(run: CaptureRun, tmp_path: Path) -> None:
    answers = tmp_path / "a.md"
    answers.write_text(f"{run.base}/static", encoding="utf-8")
    result = invoke(
        ["--answers", str(answers), "--store", str(tmp_path / "s"), "--chromium", "/nonexistent"]
    )
    assert result.exit_code == 3
    assert "Chromium not found" in result.stderr


def test_no_input_option_is_a_usage_error() -> None:
    assert invoke([]).exit_code == 2


async def failing_capture(url: str) -> PageRecord:
    return PageRecord.failure(url, "timeout", "no complete page within 30s")


async def test_a_page_stored_under_another_spelling_is_not_captured_again(tmp_path: Path) -> None:
    captured: list[str] = []

    async def capture(url: str) -> PageRecord:
        captured.append(url)
        return await failing_capture(url)

    with PageStore(tmp_path / "pages") as store:
        store.put(PageRecord.web("https://www.example.com/a", "Good copy", None))
        report = await capture_pages(
            ["http://example.com/a/"], store, CaptureOptions(), capture=capture
        )
        assert captured == []
        assert [o.result for o in report.outcomes] == ["skipped"]
        assert store.get("http://example.com/a/") == "Good copy"


async def test_a_markdown_link_ending_in_punctuation_is_captured_and_read_as_cited(
    tmp_path: Path,
) -> None:
    pages = {
        "https://en.wikipedia.org/wiki/Oklahoma": "The US state",
        "https://en.wikipedia.org/wiki/Oklahoma%21": "The musical",
    }
    captured: list[str] = []

    async def capture(url: str) -> PageRecord:
        captured.append(url)
        return PageRecord.web(url, pages[url], None)

    answer = "It premiered in 1943 ([Oklahoma!](https://en.wikipedia.org/wiki/Oklahoma!))."
    with PageStore(tmp_path / "pages") as store:
        await capture_pages(extract_urls(answer), store, CaptureOptions(), capture=capture)
        assert captured == ["https://en.wikipedia.org/wiki/Oklahoma%21"]
        assert store.get("https://en.wikipedia.org/wiki/Oklahoma!") == "The musical"


async def test_a_path_with_a_slash_is_captured_though_one_with_an_encoded_slash_is_stored(
    tmp_path: Path,
) -> None:
    async def capture(url: str) -> PageRecord:
        return PageRecord.web(url, "File b in folder a", None)

    with PageStore(tmp_path / "pages") as store:
        store.put(PageRecord.web("https://example.com/files/a%2Fb", "File named a/b", None))
        report = await capture_pages(
            ["https://example.com/files/a/b"], store, CaptureOptions(), capture=capture
        )
        assert [o.result for o in report.outcomes] == ["captured"]
        assert store.get("https://example.com/files/a/b") == "File b in folder a"


async def test_a_hash_route_stored_without_its_route_by_an_older_judgegen_is_captured_again(
    tmp_path: Path,
) -> None:
    captured: list[str] = []

    async def capture(url: str) -> PageRecord:
        captured.append(url)
        return PageRecord.web(url, "Pro plan: 10 dollars a month", None)

    with PageStore(tmp_path / "pages") as store:
        store.put(PageRecord.web("https://app.example.com/", "Welcome to the app", None))
        report = await capture_pages(
            ["https://app.example.com/#/pricing"], store, CaptureOptions(), capture=capture
        )
        assert captured == ["https://app.example.com/#/pricing"]
        assert [o.result for o in report.outcomes] == ["captured"]
        assert store.get("https://app.example.com/#/pricing") == "Pro plan: 10 dollars a month"
        assert store.get("https://app.example.com/") == "Welcome to the app"


async def test_a_failed_refresh_of_another_spelling_keeps_the_stored_page(tmp_path: Path) -> None:
    with PageStore(tmp_path / "pages") as store:
        store.put(PageRecord.web("https://www.example.com/a", "Good copy", None))
        report = await capture_pages(
            ["http://example.com/a/"],
            store,
            CaptureOptions(),
            refresh=True,
            capture=failing_capture,
        )
        assert [(o.result, o.kept_previous) for o in report.outcomes] == [("failed", True)]
        assert store.get("http://example.com/a/") == "Good copy"
        assert store.counts() == {"ok": 1, "failed": 0, "not_served": 0}


def closed_port() -> int:
    """A loopback port nobody listens on (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def proxy_down(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """`cache-pages` with HTTP(S)_PROXY set to a proxy that is down: (result, store dir)."""
    root = tmp_path_factory.mktemp("proxy_down")
    answers = root / "a.md"
    answers.write_text("See http://example.com/a and https://example.org/b", encoding="utf-8")
    store_dir = root / "store"
    args = ["--answers", str(answers), "--store", str(store_dir), "--timeout", "15"]
    proxy = f"http://127.0.0.1:{closed_port()}"
    with pytest.MonkeyPatch.context() as patch:
        for name in ("HTTP_PROXY", "HTTPS_PROXY"):
            patch.setenv(name, proxy)
        result = invoke([*args, "--chromium", default_chromium()])
    return result, store_dir


def test_a_proxy_that_is_down_is_recorded_as_our_network_failure(
    proxy_down: tuple[Any, Path],
) -> None:
    with PageStore(proxy_down[1], readonly=True) as store:
        records = [store.lookup("http://example.com/a"), store.lookup("https://example.org/b")]
    assert [(r.status, r.error_kind) for r in records] == [("failed", "offline")] * 2
    assert all("ERR_PROXY_CONNECTION_FAILED" in r.error for r in records)


def test_a_page_our_network_failed_to_capture_is_an_infra_error_when_read(
    proxy_down: tuple[Any, Path],
) -> None:
    with (
        PageStore(proxy_down[1], readonly=True) as store,
        pytest.raises(InfraError, match="failed on our side") as raised,
    ):
        store.get("http://example.com/a")
    assert raised.value.kind == "page_capture"


def test_our_network_failing_makes_cache_pages_exit_3(proxy_down: tuple[Any, Path]) -> None:
    assert proxy_down[0].exit_code == 3


class _FailingBrowser:
    """A connected browser whose every page fails to load with `message`."""

    version = "120.0"

    def __init__(self, message: str) -> None:
        self.message = message

    async def new_context(self, **kwargs: Any) -> Any:
        from playwright.async_api import Error

        raise Error(self.message)

    def is_connected(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("ERR_INTERNET_DISCONNECTED", "offline"),
        ("ERR_NETWORK_CHANGED", "offline"),
        ("ERR_NETWORK_ACCESS_DENIED", "offline"),
        ("ERR_PROXY_CONNECTION_FAILED", "offline"),
        ("ERR_CONNECTION_REFUSED", "network"),  # the site's server is down
        ("ERR_NAME_NOT_RESOLVED", "network"),  # alone, a dead domain (see capture_pages)
    ],
)
async def test_a_network_error_is_ours_only_when_it_says_our_side_failed(
    code: str, kind: str
) -> None:
    message = f"Page.goto: net::{code} at https://example.com/a"
    browser: Any = _FailingBrowser(message)
    record = await capture.capture_page(browser, "https://example.com/a", CaptureOptions())
    assert (record.status, record.error_kind) == ("failed", kind)


async def unresolved_capture(url: str) -> PageRecord:
    return PageRecord.failure(url, "network", f"Page.goto: net::ERR_NAME_NOT_RESOLVED at {url}")


async def test_every_url_of_a_batch_unresolved_means_our_resolver_is_down(tmp_path: Path) -> None:
    with PageStore(tmp_path / "pages") as store:
        report = await capture_pages(
            ["https://a.example/1", "https://b.example/2"],
            store,
            CaptureOptions(),
            capture=unresolved_capture,
        )
        assert [o.error_kind for o in report.outcomes] == ["offline", "offline"]
        with pytest.raises(InfraError):
            store.get("https://a.example/1")


async def test_an_unresolved_domain_among_reachable_pages_is_the_pages_failure(
    tmp_path: Path,
) -> None:
    async def capture(url: str) -> PageRecord:
        if "dead" in url:
            return await unresolved_capture(url)
        return PageRecord.web(url, "Live page", None)

    with PageStore(tmp_path / "pages") as store:
        report = await capture_pages(
            ["https://dead.example/1", "https://live.example/2"],
            store,
            CaptureOptions(),
            capture=capture,
        )
        assert [o.error_kind for o in report.outcomes] == ["network", None]
        assert store.get("https://dead.example/1") is None  # cited, it is missing: a verdict


@pytest.mark.parametrize("kind", ["throttled", "consent_wall"])
async def test_a_site_that_answered_shows_our_resolver_works_though_its_failure_is_ours(
    tmp_path: Path, kind: FailureKind
) -> None:
    """A 429 or a consent dialog came from a site whose name resolved: the names that did not
    are dead domains (the pages' failures), not our resolver down."""

    async def capture(url: str) -> PageRecord:
        if "live" in url:
            return PageRecord.failure(url, kind, "the site answered")
        return await unresolved_capture(url)

    with PageStore(tmp_path / "pages") as store:
        report = await capture_pages(
            ["https://live.example/1", "https://a.example/2", "https://b.example/3"],
            store,
            CaptureOptions(),
            capture=capture,
        )
        assert [o.error_kind for o in report.outcomes] == [kind, "network", "network"]


async def test_one_unresolved_host_alone_is_the_pages_failure(tmp_path: Path) -> None:
    with PageStore(tmp_path / "pages") as store:
        report = await capture_pages(
            ["https://dead.example/1", "https://dead.example/2"],
            store,
            CaptureOptions(),
            capture=unresolved_capture,
        )
        assert [o.error_kind for o in report.outcomes] == ["network", "network"]


def capture_paths(
    server: str, paths: list[str], store_dir: Path, options: CaptureOptions | None = None
) -> dict[str, PageRecord]:
    """Capture `paths` of the fixture server with the real Chromium (by default with the
    default limits); their records by path."""
    options = options or CaptureOptions(chromium=default_chromium(), timeout=CAPTURE_TIMEOUT_S)

    async def capture() -> dict[str, PageRecord]:
        with PageStore(store_dir) as store:
            await capture_pages([server + path for path in paths], store, options)
            return {path: store.lookup(server + path) for path in paths}  # type: ignore[misc]

    return asyncio.run(capture())


@pytest.fixture(scope="module")
def navigating(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageRecord]:
    """The records of pages that navigate as they are read, by path."""
    paths = ["/hop-on-read", "/hop-while-read", "/loop"]
    return capture_paths(server, paths, tmp_path_factory.mktemp("navigating"))


def test_a_page_that_redirects_as_it_is_read_is_stored_as_its_target(
    navigating: dict[str, PageRecord], server: str
) -> None:
    record = navigating["/hop-on-read"]
    assert (record.status, record.final_url) == ("ok", f"{server}/static")
    assert "The capital is Paris." in (record.text or "")  # not the interstitial's text


def test_a_page_whose_read_is_cut_by_a_redirect_is_read_again(
    navigating: dict[str, PageRecord], server: str
) -> None:
    record = navigating["/hop-while-read"]
    assert (record.status, record.final_url) == ("ok", f"{server}/static")
    assert "The capital is Paris." in (record.text or "")


def test_a_page_that_keeps_navigating_is_a_timeout_not_a_network_failure(
    navigating: dict[str, PageRecord],
) -> None:
    record = navigating["/loop"]
    assert (record.status, record.error_kind) == ("failed", "timeout")
    assert "kept navigating" in (record.error or "")


@pytest.fixture(scope="module")
def nested(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageRecord]:
    """The records of pages whose whole text is in a shadow root or a frame, by path."""
    return capture_paths(server, ["/shadow-only", "/frame-only"], tmp_path_factory.mktemp("nested"))


def test_a_page_whose_text_is_all_in_a_shadow_root_is_stored_with_that_text(
    nested: dict[str, PageRecord],
) -> None:
    record = nested["/shadow-only"]
    assert record.status == "ok", record.error
    assert (record.text or "").strip() == "Revenue grew 12 percent in 2024."  # no stylesheet


def test_a_page_whose_text_is_all_in_a_frame_is_stored_with_that_text(
    nested: dict[str, PageRecord],
) -> None:
    record = nested["/frame-only"]
    assert record.status == "ok", record.error
    assert "The capital is Paris." in (record.text or "")


@pytest.fixture(scope="module")
def late(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageRecord]:
    """The records of pages whose text changes after network idle, by path."""
    paths = ["/late", "/appending", "/late-with-clock"]
    return capture_paths(server, paths, tmp_path_factory.mktemp("late"))


def test_a_page_rendered_by_a_timer_after_network_idle_is_stored_with_its_rendered_text(
    late: dict[str, PageRecord],
) -> None:
    record = late["/late"]
    assert record.status == "ok", record.error
    assert "The river is 410 km long." in (record.text or "")
    assert "Loading" not in (record.text or "")


def test_the_screenshot_of_a_late_rendered_page_shows_its_rendered_content(
    late: dict[str, PageRecord],
) -> None:
    record = late["/late"]
    assert record.screenshot is not None
    assert jpeg_size(record.screenshot)[1] > 3000  # the rendered article, not the placeholder


def test_a_page_still_being_appended_when_read_is_stored_once_complete(
    late: dict[str, PageRecord],
) -> None:
    record = late["/appending"]
    assert record.status == "ok", record.error
    assert "Part 60 of 60" in (record.text or "")


def test_a_page_that_never_stops_changing_is_stored_with_its_late_content(
    late: dict[str, PageRecord],
) -> None:
    record = late["/late-with-clock"]
    assert record.status == "ok", record.error
    assert "The bridge opened in 1932." in (record.text or "")
    assert "Tick" in (record.text or "")


@pytest.fixture(scope="module")
def routes(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageRecord]:
    """The records of a hash-routed app's home page and two of its routes, by path."""
    paths = ["/app#/pricing", "/app#!/about", "/app"]
    return capture_paths(server, paths, tmp_path_factory.mktemp("routes"))


def test_each_hash_route_is_captured_as_its_own_page_under_its_own_url(
    routes: dict[str, PageRecord], server: str
) -> None:
    captured = {path: (r.url, r.final_url, (r.text or "").strip()) for path, r in routes.items()}
    assert captured == {
        path: (server + path, server + path, text)
        for path, text in [
            ("/app#/pricing", "Pro plan: 10 dollars a month"),
            ("/app#!/about", "Founded in 2019"),
            ("/app", "Welcome to the app"),
        ]
    }


@pytest.fixture(scope="module")
def walled(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageRecord]:
    """The records of pages that send the browser to a sign-in page, and of one cited sign-in
    page, by path."""
    paths = ["/members", "/profile", "/accounts/login"]
    return capture_paths(server, paths, tmp_path_factory.mktemp("walled"))


@pytest.mark.parametrize("path", ["/members", "/profile"])
def test_a_page_that_sends_the_browser_to_sign_in_is_a_blocked_failure(
    walled: dict[str, PageRecord], path: str
) -> None:
    record = walled[path]
    assert (record.status, record.error_kind) == ("failed", "blocked")
    assert "login" in (record.final_url or "")
    assert "sign-in or consent page (127.0.0.1/" in (record.error or "")


def test_a_sign_in_page_cited_as_itself_is_stored_as_a_page(
    walled: dict[str, PageRecord],
) -> None:
    record = walled["/accounts/login"]
    assert record.status == "ok", record.error
    assert "Join now to see the profile." in (record.text or "")


@pytest.fixture(scope="module")
def sent_home(server: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of pages the site redirected to its home page, or elsewhere."""
    paths = [
        "/news/2023/some-article",
        "/old-article",
        "/gone-by-script",
        "/removed-story",
        "/index.html",
        "/",
        "/moved-article",
    ]
    store_dir = tmp_path_factory.mktemp("sent_home")
    capture_paths(server, paths, store_dir)
    return store_dir


@pytest.mark.parametrize(
    ("path", "home"),
    [
        ("/news/2023/some-article", "/"),
        ("/old-article", "/home"),
        ("/gone-by-script", "/en/"),
        ("/removed-story", "/?from=404"),
    ],
)
def test_a_deep_link_sent_to_the_home_page_is_a_redirect_home_failure_and_missing(
    sent_home: Path, server: str, path: str, home: str
) -> None:
    with PageStore(sent_home, readonly=True) as store:
        record = store.lookup(server + path)
        assert record is not None
        assert (record.status, record.error_kind) == ("failed", "redirect_home")
        assert record.final_url == server + home
        assert f"redirected to the site's home page {server}{home}" in (record.error or "")
        assert store.get(server + path) is None  # the judge reads no page: it is missing
        assert not store.has_page(server + path)  # captured again next time


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/index.html", "Top stories today"),
        ("/", "Top stories today"),
        ("/moved-article", "The capital is Paris."),
    ],
)
def test_a_cited_home_page_or_a_moved_page_is_stored_where_it_ended(
    sent_home: Path, server: str, path: str, text: str
) -> None:
    with PageStore(sent_home, readonly=True) as store:
        assert text in (store.get(server + path) or "")


@dataclass
class NotFoundRun:
    """`cache-pages` (its human output) over pages a site answers with HTTP 200, some of them
    not found (`NOT_FOUND_PATHS`): their records by path."""

    records: dict[str, PageRecord]
    store_dir: Path
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def not_found(server: str, tmp_path_factory: pytest.TempPathFactory) -> NotFoundRun:
    root = tmp_path_factory.mktemp("not_found")
    answers = root / "answer.md"
    answers.write_text(" and ".join(server + path for path in NOT_FOUND_PATHS), encoding="utf-8")
    store_dir = root / "store"
    args = ["--answers", str(answers), "--store", str(store_dir), "--chromium", default_chromium()]
    result = invoke([*args, "--timeout", str(CAPTURE_TIMEOUT_S)])
    with PageStore(store_dir, readonly=True) as store:
        records = {path: store.lookup(server + path) for path in NOT_FOUND_PATHS}
    found = {path: record for path, record in records.items() if record is not None}
    assert found.keys() == NOT_FOUND_PATHS.keys()
    return NotFoundRun(found, store_dir, result.exit_code, result.stdout, result.stderr)


@pytest.mark.parametrize("path", ["/gone-article", "/verschwunden"])
def test_a_page_saying_it_was_not_found_under_http_200_is_a_not_found_failure_and_missing(
    not_found: NotFoundRun, server: str, path: str
) -> None:
    record = not_found.records[path]
    assert (record.status, record.error_kind, record.http_status) == ("failed", "not_found", 200)
    assert "soft 404" in (record.error or "")
    with PageStore(not_found.store_dir, readonly=True) as store:
        assert store.get(server + path) is None  # the judge reads no page: it is missing
        assert not store.has_page(server + path)  # captured again next time


def test_the_failure_says_what_the_not_found_page_said(not_found: NotFoundRun) -> None:
    assert "saying 'Page not found'" in (not_found.records["/gone-article"].error or "")
    assert "saying 'Seite nicht gefunden'" in (not_found.records["/verschwunden"].error or "")


@pytest.mark.parametrize(
    ("path", "final"), [("/old", "/404"), ("/products/widget-9", "/search?q=widget+9")]
)
def test_a_page_redirected_to_the_sites_error_or_search_page_is_a_not_found_failure(
    not_found: NotFoundRun, server: str, path: str, final: str
) -> None:
    record = not_found.records[path]
    assert (record.status, record.error_kind) == ("failed", "not_found")
    assert record.final_url == server + final
    assert f"redirected to {server}{final}, the site's error, search" in (record.error or "")


@pytest.mark.parametrize(
    ("path", "text"),
    [("/http-errors", "Status 410"), ("/error-correction", "Reed-Solomon codes")],
)
def test_an_article_about_404_errors_or_a_short_page_named_error_is_stored(
    not_found: NotFoundRun, path: str, text: str
) -> None:
    assert text in stored_text(not_found.records[path])


def test_cache_pages_says_which_pages_were_not_found_and_why(
    not_found: NotFoundRun, server: str
) -> None:
    assert not_found.exit_code == 1  # pages failed to load, all recorded
    for path, kind in NOT_FOUND_PATHS.items():
        progress = f"failed {kind} 200 {server}{path}: "
        assert (progress in not_found.stderr) == (kind is not None), path
    gone = f"  failed (not_found): {server}/gone-article: the site served a page saying"
    assert gone in not_found.stdout


def stored_before_the_rules(server: str) -> list[PageRecord]:
    """Walls an older judgegen stored as the cited pages (with the store's API, as it did):
    the site had sent the browser to its home page or to sign in, or served a bot check."""
    home = HOME_HTML.decode()
    return [
        PageRecord.web(server + "/news/2023/some-article", home, None, final_url=server + "/"),
        PageRecord.web(
            server + "/tall", LOGIN_HTML.decode(), None, final_url=server + "/uas/login"
        ),
        PageRecord.web(server + "/static", "Enable JavaScript and cookies to continue", None),
    ]


@pytest.mark.parametrize("refresh", [False, True], ids=["rerun", "refresh"])
def test_cache_pages_captures_again_a_wall_stored_as_the_page_before_the_rules(
    server: str, tmp_path: Path, refresh: bool
) -> None:
    store_dir = tmp_path / "store"
    with PageStore(store_dir) as store:
        for record in stored_before_the_rules(server):
            store.put(record)
    answers = tmp_path / "answer.md"
    answers.write_text(
        f"Gone: {server}/news/2023/some-article, restored: {server}/tall and {server}/static",
        encoding="utf-8",
    )
    args = ["--answers", str(answers), "--store", str(store_dir), "--json"]
    result = invoke(
        [*args, "--chromium", default_chromium(), "--timeout", str(CAPTURE_TIMEOUT_S)]
        + (["--refresh"] if refresh else [])
    )
    outcomes = {o["url"]: o for o in json.loads(result.stdout)["capture"]["outcomes"]}
    assert [(o["result"], o["kept_previous"]) for o in outcomes.values()] == [
        ("failed", False),
        ("captured", False),
        ("captured", False),
    ]
    with PageStore(store_dir, readonly=True) as store:
        gone = store.lookup(server + "/news/2023/some-article")
        assert gone is not None and (gone.status, gone.error_kind) == ("failed", "redirect_home")
        assert "Tall top" in (store.get(server + "/tall") or "")
        assert "The capital is Paris." in (store.get(server + "/static") or "")
        assert store.counts() == {"ok": 2, "failed": 1, "not_served": 0}


async def read_as_an_older_capture(url: str) -> str:
    """The text a capture before the soft-404 and consent rules stored for `url`: the body's
    `innerText` once loaded, no dialog answered, no title or heading read."""
    async with capture.chromium_session(capture.CaptureOptions(chromium=default_chromium())) as b:
        page = await b.new_page()
        await page.goto(url, wait_until="load")
        return str(await page.evaluate("() => document.body.innerText"))


def stored_by_an_older_judgegen(store_dir: Path, server: str) -> dict[str, str]:
    """A soft 404 and a page a cookie-consent dialog hides, stored as the pages by an older
    judgegen (record version 2, its text as it read it), beside a page of this version that
    says "not found": their URLs by path."""
    urls = {path: server + path for path in ("/gone-article", "/consent-rejectable")}
    with PageStore(store_dir) as store:
        for url in urls.values():
            text = asyncio.run(read_as_an_older_capture(url))
            store.put(PageRecord.web(url, text, None, final_url=url, version=2))
        current = server + "/http-errors"
        store.put(PageRecord.web(current, "404 Not Found\nStatus 410", None, final_url=current))
    return urls


def test_cache_pages_recheck_lists_the_old_soft_404_and_consent_banner_stored_as_pages(
    server: str, tmp_path: Path
) -> None:
    urls = stored_by_an_older_judgegen(tmp_path / "store", server)
    result = invoke(["--recheck", "--store", str(tmp_path / "store")])
    assert result.exit_code == 1, result.stderr  # some stored pages read as failures
    lines = [line.split("\t") for line in result.stdout.splitlines()]
    assert [(kind, url) for kind, url, _ in lines] == [
        ("not_found", urls["/gone-article"]),
        ("consent_wall", urls["/consent-rejectable"]),
    ]
    assert "saying 'Sorry, we couldn't find that page'" in lines[0][2]
    assert "2 stored page(s) in" in result.stderr
    assert f"--recheck --refresh --store {tmp_path / 'store'}" in result.stderr
    listed = json.loads(invoke(["--recheck", "--store", str(tmp_path / "store"), "--json"]).stdout)
    assert listed["version"] == cache_pages.OUTPUT_VERSION
    refused = listed["recheck"]["refused"]
    assert [(r["error_kind"], r["record_version"]) for r in refused] == [
        ("not_found", 2),
        ("consent_wall", 2),
    ]


def test_cache_pages_recheck_refresh_captures_them_again_with_todays_rules(
    server: str, tmp_path: Path
) -> None:
    urls = stored_by_an_older_judgegen(tmp_path / "store", server)
    args = ["--recheck", "--refresh", "--store", str(tmp_path / "store"), "--json"]
    result = invoke([*args, "--timeout", str(CAPTURE_TIMEOUT_S)])
    assert result.exit_code == 1, result.stderr  # the soft 404 failed, recorded
    outcomes = {o["url"]: o for o in json.loads(result.stdout)["capture"]["outcomes"]}
    assert (outcomes[urls["/gone-article"]]["error_kind"]) == "not_found"
    assert (outcomes[urls["/consent-rejectable"]]["consent"]) == "rejected"
    with PageStore(tmp_path / "store", readonly=True) as store:
        assert FACT in (store.get(urls["/consent-rejectable"]) or "")
        assert store.recheck().refused == []
    assert invoke(["--recheck", "--store", str(tmp_path / "store")]).exit_code == 0


def test_cache_pages_recheck_reads_the_store_alone(tmp_path: Path) -> None:
    answers = tmp_path / "answer.md"
    answers.write_text("See https://example.com/a", encoding="utf-8")
    both = invoke(["--recheck", "--answers", str(answers), "--store", str(tmp_path)])
    assert both.exit_code == 2 and "--recheck reads the store alone" in both.stderr
    none = invoke(["--recheck", "--store", str(tmp_path / "nothing")])
    assert none.exit_code == 2 and "no page store there" in none.stderr


@pytest.fixture(scope="module")
def shortened(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageRecord]:
    """The records of short links cited on another host (localhost) than the site they send
    the browser to (127.0.0.1), by path."""
    short_host = server.replace("127.0.0.1", "localhost")
    return capture_paths(short_host, list(SHORT_LINKS), tmp_path_factory.mktemp("shortened"))


def test_a_short_link_to_a_home_page_is_stored_as_that_home_page(
    shortened: dict[str, PageRecord], server: str
) -> None:
    record = shortened["/x7Kq2A"]
    assert (record.status, record.final_url) == ("ok", server + "/"), record.error
    assert "Top stories today" in (record.text or "")
    assert record.linked_url == server + "/"  # what a read of it needs of the navigations


def test_a_short_link_to_an_article_sent_home_is_a_redirect_home_failure(
    shortened: dict[str, PageRecord], server: str
) -> None:
    record = shortened["/r4Nd0m9"]
    assert (record.status, record.error_kind) == ("failed", "redirect_home")
    assert record.final_url == server + "/"
    assert record.linked_url == server + "/news/2023/some-article"


def test_cache_pages_captures_again_a_short_link_stored_without_where_it_pointed(
    server: str, tmp_path: Path
) -> None:
    """An older judgegen stored both short links as the home page they ended on; which one
    pointed at an article since sent home, only a new capture tells."""
    short_host = server.replace("127.0.0.1", "localhost")
    store_dir = tmp_path / "store"
    with PageStore(store_dir) as store:
        for path in SHORT_LINKS:
            home = HOME_HTML.decode()
            store.put(PageRecord.web(short_host + path, home, None, final_url=server + "/"))
    answers = tmp_path / "answer.md"
    answers.write_text(" and ".join(short_host + path for path in SHORT_LINKS), encoding="utf-8")
    args = ["--answers", str(answers), "--store", str(store_dir), "--json"]
    result = invoke([*args, "--chromium", default_chromium(), "--timeout", str(CAPTURE_TIMEOUT_S)])
    outcomes = json.loads(result.stdout)["capture"]["outcomes"]
    assert [(o["result"], o["error_kind"]) for o in outcomes] == [
        ("captured", None),
        ("failed", "redirect_home"),
    ]
    with PageStore(store_dir, readonly=True) as store:
        assert "Top stories today" in (store.get(short_host + "/x7Kq2A") or "")
        assert store.get(short_host + "/r4Nd0m9") is None
        assert store.counts() == {"ok": 1, "failed": 1, "not_served": 0}


AS_READ_OPTIONS = CaptureOptions(
    chromium=default_chromium(),
    timeout=CAPTURE_TIMEOUT_S,
    idle_wait=0.5,
    script_wait=5.0,
    concurrency=8,
)
"""Network idle given up on after 0.5 s, and what the page set to happen waited for up to 5 s:
the content a timer or a fetch of a page below brings 3.5 to 4 s after load, long after a
capture that reads the page at network idle has read it."""


@pytest.fixture(scope="module")
def as_read(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageRecord]:
    """The records of pages whose content a reader finds only after a pause, a scroll or a
    click, or in a frame or a shadow root beside the page's own menus, by path."""
    paths = [
        "/timer-drawn",
        "/slow-fetch",
        "/timer-to-sign-in",
        "/refresh-later",
        "/lazy-section",
        "/endless-list",
        "/late-list",
        "/details",
        "/tabs",
        "/skipped-section",
        "/framed",
        "/framed-elsewhere",
        "/component",
        "/slotted",
        "/busy-once",
        "/busy",
    ]
    return capture_paths(server, paths, tmp_path_factory.mktemp("as_read"), AS_READ_OPTIONS)


def stored_text(record: PageRecord) -> str:
    """The text a judge checks claims against: the record's, when it is a stored page."""
    assert record.status == "ok", record.error
    return record.text or ""


@pytest.mark.parametrize("path", ["/timer-drawn", "/slow-fetch"])
def test_an_article_drawn_after_network_idle_beside_the_menus_is_stored_with_it(
    as_read: dict[str, PageRecord], path: str
) -> None:
    """The menus are more than a placeholder: read as the network went idle, the page was
    stored without its article, and every claim about it judged unsupported."""
    assert FACT in stored_text(as_read[path])
    assert "Loading" not in stored_text(as_read[path])


def test_a_redirect_to_sign_in_set_on_a_timer_is_a_blocked_failure(
    as_read: dict[str, PageRecord],
) -> None:
    record = as_read["/timer-to-sign-in"]
    assert (record.status, record.error_kind) == ("failed", "blocked"), record.text
    assert (record.final_url or "").endswith("/accounts/login")


def test_a_page_a_meta_refresh_sends_on_after_a_pause_is_stored_as_its_target(
    as_read: dict[str, PageRecord], server: str
) -> None:
    record = as_read["/refresh-later"]
    assert "The capital is Paris." in stored_text(record)
    assert record.final_url == f"{server}/static"


@pytest.mark.parametrize("path", ["/lazy-section", "/endless-list", "/late-list"])
def test_content_loaded_as_it_comes_into_view_far_down_is_stored(
    as_read: dict[str, PageRecord], path: str
) -> None:
    assert FACT in stored_text(as_read[path])


@pytest.mark.parametrize("path", ["/details", "/tabs", "/skipped-section"])
def test_text_behind_a_click_or_not_drawn_until_seen_is_stored(
    as_read: dict[str, PageRecord], path: str
) -> None:
    """A closed `<details>`, a hidden tab panel, a `content-visibility: auto` section: the
    page holds the text, `innerText` leaves it out."""
    assert FACT in stored_text(as_read[path])


@pytest.mark.parametrize("path", ["/framed", "/framed-elsewhere", "/component"])
def test_an_article_in_a_frame_or_a_shadow_root_beside_the_menus_is_stored_with_them(
    as_read: dict[str, PageRecord], path: str
) -> None:
    text = stored_text(as_read[path])
    assert FACT in text and "Section 11" in text


def test_text_shown_through_a_shadow_roots_slot_is_stored_once(
    as_read: dict[str, PageRecord],
) -> None:
    assert stored_text(as_read["/slotted"]).count(FACT) == 1


def test_a_429_asking_for_a_short_wait_is_asked_again_after_it(
    as_read: dict[str, PageRecord],
) -> None:
    record = as_read["/busy-once"]
    assert record.http_status == 200
    assert FACT in stored_text(record)


def test_a_429_still_refusing_is_our_failure_saying_to_capture_it_again_later(
    as_read: dict[str, PageRecord],
) -> None:
    """The site refused the capture host, not the page: reading the page is an infrastructure
    failure (the evaluation is incomplete and redone), never a claim found unsupported."""
    record = as_read["/busy"]
    assert (record.status, record.error_kind, record.http_status) == ("failed", "throttled", 429)
    assert "capture it again later" in (record.error or "")
    assert record.error_kind in INFRA_FAILURES


@dataclass
class Consented:
    """Pages behind consent dialogs, captured into `store_dir`: their records by path."""

    store_dir: Path
    records: dict[str, PageRecord]


@pytest.fixture(scope="module")
def consented(server: str, tmp_path_factory: pytest.TempPathFactory) -> Consented:
    paths = [
        "/consent-first",
        "/consent-rejectable",
        "/consent-stuck",
        "/consent-german",
        "/consent-tool",
        "/consent-framed",
        "/cookie-notice",
    ]
    store_dir = tmp_path_factory.mktemp("consented")
    return Consented(store_dir, capture_paths(server, paths, store_dir))


def test_an_article_hidden_until_cookies_are_accepted_is_stored(consented: Consented) -> None:
    assert FACT in stored_text(consented.records["/consent-first"])


def test_a_dialog_offering_only_accept_is_accepted_and_the_record_says_so(
    consented: Consented,
) -> None:
    """Nothing else shows the page: its record says the capture agreed to cookies."""
    record = consented.records["/consent-first"]
    assert record.consent == "accepted"
    assert "We use cookies" not in stored_text(record)


@pytest.mark.parametrize(
    "path", ["/consent-rejectable", "/consent-german", "/consent-tool", "/consent-framed"]
)
def test_a_dialog_offering_a_refusal_is_refused_and_the_article_stored(
    consented: Consented, path: str
) -> None:
    """Accept is never pressed when a button agrees to nothing: in English, in German, by a
    consent tool's own button whatever its label, in a frame."""
    record = consented.records[path]
    assert FACT in stored_text(record)
    assert "Personalised ads on" not in stored_text(record)
    assert record.consent == "rejected"


def test_a_dialog_that_never_lets_the_article_through_is_a_consent_wall_failure(
    consented: Consented,
) -> None:
    record = consented.records["/consent-stuck"]
    assert (record.status, record.error_kind, record.consent) == (
        "failed",
        "consent_wall",
        "rejected",
    )
    assert "cookie-consent dialog hides the page" in (record.error or "")


def test_a_consent_wall_leaves_judging_the_page_incomplete_not_unsupported(
    consented: Consented, server: str
) -> None:
    """A reader pressing the button sees the page: the capture failed, not the answer."""
    with (
        PageStore(consented.store_dir, readonly=True) as store,
        pytest.raises(InfraError, match="failed on our side"),
    ):
        store.get(server + "/consent-stuck")


def test_cache_pages_progress_says_how_a_consent_dialog_was_answered(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outcome = CaptureOutcome(
        url="https://example.com/a", result="captured", kind="web", consent="accepted"
    )
    cache_pages._progress(1, 1, outcome)
    assert capsys.readouterr().err.endswith("(consent dialog accepted)\n")


def test_a_cookie_notice_that_hides_nothing_is_left_alone_and_stored_with_the_page(
    consented: Consented,
) -> None:
    record = consented.records["/cookie-notice"]
    text = stored_text(record)
    assert FACT in text and "This site uses cookies." in text
    assert record.consent is None
    assert "Personalised ads on" not in text  # its Accept was not pressed


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, capture.RETRY_PAUSE),
        ("2", 2.0),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
    ],
)
def test_retry_after_is_read_as_seconds_or_a_date(
    header: str | None, seconds: float | None
) -> None:
    assert capture._retry_after(header) == seconds
