"""A local web site for the web tools' tests: a real HTTP server (stdlib, in a thread) on a
loopback address, serving the stored real-world pages and the odd answers the tests need.

Routes: `/pages/<file>` (tests/hand/web_pages), `/redirect?to=URL` (302), `/chain/<n>` (n more
302 hops), `/big` (about 3 MB of text), `/slow` (headers, then silence for 30 s), `/json`,
`/text`, `/latin1` (HTML in ISO-8859-1, said only in the header), `/image.png`, `/missing`
(404), `/form` and `POST /order` (a form and its result), `/escape?to=URL` (a page whose script
fetches URL, its title saying how it went), `/links?to=URL` (a link to URL) and `/search`
(SearXNG's JSON API, see `searxng_answer`).
Every request is recorded in `requests` as (method, path).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

PAGES = Path(__file__).parent / "web_pages"

FORM = b"""<!doctype html><html><head><title>Order a book</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<main><h1>Order a book</h1>
<form action="/order" method="post">
<label>Your name <input name="name"></label>
<label>Copies <input name="copies" type="number" value="1"></label>
<button type="submit">Place order</button>
</form></main></body></html>"""

SEARXNG_RESULTS: dict[str, Any] = {
    "query": "rust option",
    "number_of_results": 0,
    "results": [
        {
            "url": "https://doc.rust-lang.org/std/option/",
            "title": "std::option - Rust",
            "content": "Optional values. Type Option represents an optional value.",
            "engine": "duckduckgo",
            "parsed_url": ["https", "doc.rust-lang.org", "/std/option/", "", "", ""],
            "template": "default.html",
            "engines": ["duckduckgo", "brave"],
            "positions": [1, 2],
            "score": 3.0,
            "category": "general",
            "publishedDate": None,
        },
        {
            "url": "https://doc.rust-lang.org/book/ch06-01-defining-an-enum.html",
            "title": "Defining an Enum - The Rust Programming Language",
            "content": "The Option enum and its advantages over null values. " * 12,
            "engine": "brave",
            "parsed_url": ["https", "doc.rust-lang.org", "/book/", "", "", ""],
            "template": "default.html",
            "engines": ["brave"],
            "positions": [2],
            "score": 1.0,
            "category": "general",
        },
        {
            "url": "https://example.org/third",
            "title": "A third result",
            "content": "",
            "engine": "brave",
            "engines": ["brave"],
            "positions": [3],
            "score": 0.5,
            "category": "general",
        },
    ],
    "answers": [],
    "corrections": [],
    "infoboxes": [],
    "suggestions": ["rust option unwrap", "rust option map"],
    "unresponsive_engines": [["google", "timeout"]],
}


@dataclass
class Site:
    host: str
    port: int
    requests: list[tuple[str, str]] = field(default_factory=list)
    # What `/search` answers: (status, content type, body).
    searxng_answer: tuple[int, str, bytes] = (
        200,
        "application/json",
        json.dumps(SEARXNG_RESULTS).encode(),
    )
    search_queries: list[dict[str, list[str]]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"


class _Handler(BaseHTTPRequestHandler):
    site: Site

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, content_type: str, body: bytes, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.site.requests.append(("POST", self.path))
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode())
        name = form.get("name", ["?"])[0]
        copies = form.get("copies", ["?"])[0]
        page = (
            f"<!doctype html><html><head><title>Order placed</title></head><body><main>"
            f"<h1>Thank you, {name}</h1><p>Your order of {copies} copies is placed.</p>"
            f"</main></body></html>"
        )
        self._send(200, "text/html; charset=utf-8", page.encode())

    def do_GET(self) -> None:
        self.site.requests.append(("GET", self.path))
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        path = parts.path
        if path.startswith("/pages/"):
            page = PAGES / path.removeprefix("/pages/")
            self._send(200, "text/html; charset=utf-8", page.read_bytes())
        elif path == "/redirect":
            self._send(302, "text/plain", b"", Location=query["to"][0])
        elif path.startswith("/chain/"):
            left = int(path.removeprefix("/chain/"))
            target = f"/chain/{left - 1}" if left > 0 else "/text"
            self._send(302, "text/plain", b"", Location=target)
        elif path == "/big":
            self._send(200, "text/plain", b"0123456789abcdef\n" * 200_000)
        elif path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.flush()
            time.sleep(30)
        elif path == "/json":
            self._send(200, "application/json", b'{"name":"ToBe","tools":["web_fetch"]}')
        elif path == "/text":
            self._send(200, "text/plain; charset=utf-8", "plain words, caf\u00e9".encode())
        elif path == "/image.png":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
        elif path == "/latin1":
            page = (
                "<html><body><main><h1>Caf\u00e9 cr\u00e8me</h1>"
                "<p>D\u00e9j\u00e0 vu, na\u00efve fa\u00e7ade.</p></main></body></html>"
            )
            self._send(200, "text/html; charset=iso-8859-1", page.encode("latin-1"))
        elif path == "/form":
            self._send(200, "text/html; charset=utf-8", FORM)
        elif path == "/escape":
            target = json.dumps(query["to"][0])
            script = (
                f"fetch({target}).then(() => {{ document.title = 'reached' }},"
                " () => { document.title = 'blocked' })"
            )
            page = f"<html><body><p>reaching out</p><script>{script}</script></body></html>"
            self._send(200, "text/html", page.encode())
        elif path == "/links":
            target = query["to"][0]
            page = f'<html><body><a href="{target}">Go inside</a></body></html>'
            self._send(200, "text/html", page.encode())
        elif path == "/search":
            self.site.search_queries.append(query)
            status, content_type, body = self.site.searxng_answer
            self._send(status, content_type, body)
        else:
            self._send(404, "text/html", b"<html><body><h1>Not Found</h1></body></html>")


@contextmanager
def serving(host: str = "127.0.0.1", port: int = 0) -> Iterator[Site]:
    """A site on `host` (any loopback address), on `port` (0: a free one), until the end."""
    handler = type("Handler", (_Handler,), {})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    site = Site(host, server.server_address[1])
    handler.site = site
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
