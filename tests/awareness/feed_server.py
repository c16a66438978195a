"""A real HTTP server for feed tests: serves feed documents with ETag and Last-Modified.

It answers conditional requests with 304 Not Modified like a well-behaved feed host (the
ETag wins over the date, as RFC 9110 says) and records every request it receives, so tests
can see what the adapter sent. `stop` and `start` take it down and bring it back on the same
port, as a restarting host would.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DATA = Path(__file__).resolve().parent / "feeds"
# The Last-Modified of a document's first version; each change moves it on by a minute.
FIRST_MODIFIED = 1_740_000_000


@dataclass(frozen=True)
class Seen:
    """One request as the server received and answered it."""

    path: str
    headers: dict[str, str]
    status: int


@dataclass
class _Document:
    body: bytes
    content_type: str
    version: int = 0

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'

    @property
    def modified(self) -> int:
        return FIRST_MODIFIED + 60 * self.version


class FeedServer:
    def __init__(self) -> None:
        self._documents: dict[str, _Document] = {}
        self._lock = threading.Lock()
        self.requests: list[Seen] = []
        self.port = 0
        self._server: ThreadingHTTPServer | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def publish(self, path: str, body: bytes, content_type: str) -> None:
        with self._lock:
            old = self._documents.get(path)
            version = old.version + 1 if old else 0
            self._documents[path] = _Document(body, content_type, version)

    def publish_file(self, path: str, name: str, content_type: str) -> None:
        self.publish(path, (DATA / name).read_bytes(), content_type)

    def add_entry(self, path: str, fragment: str) -> None:
        """Put an <item> or <entry> first in the document at `path` (feeds list newest first)."""
        with self._lock:
            current = self._documents[path]
        text = current.body.decode()
        marker = "<item>" if "<item>" in text else "<entry>"
        position = text.index(marker)
        changed = text[:position] + fragment.strip() + "\n    " + text[position:]
        self.publish(path, changed.encode(), current.content_type)

    def seen(self, path: str) -> list[Seen]:
        with self._lock:
            return [request for request in self.requests if request.path == path]

    def answer(self, path: str, headers: dict[str, str]) -> tuple[int, _Document | None]:
        with self._lock:
            document = self._documents.get(path)
            status = 404 if document is None else _conditional_status(document, headers)
            self.requests.append(Seen(path, headers, status))
            return status, document

    def start(self) -> None:
        """Listen (again) on 127.0.0.1: a free port the first time, the same port after."""
        handler = type("Handler", (_Handler,), {"feeds": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, name="feed-server", daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _conditional_status(document: _Document, headers: dict[str, str]) -> int:
    if "if-none-match" in headers:
        return 304 if headers["if-none-match"] == document.etag else 200
    if "if-modified-since" in headers:
        since = parsedate_to_datetime(headers["if-modified-since"]).timestamp()
        return 304 if document.modified <= since else 200
    return 200


class _Handler(BaseHTTPRequestHandler):
    feeds: FeedServer

    def do_GET(self) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        status, document = self.feeds.answer(self.path, headers)
        self.send_response(status)
        body = b""
        if document is not None:
            self.send_header("ETag", document.etag)
            self.send_header("Last-Modified", formatdate(document.modified, usegmt=True))
            if status == 200:
                body = document.body
                self.send_header("Content-Type", document.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""
