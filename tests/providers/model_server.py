"""A local provider that lists models the way each wire API does, and answers OpenAI chat.

A real HTTP server (stdlib, in a thread): `GET` answers from `pages`, keyed by path and then by
the paging token the client sent (Anthropic's `after_id`, Gemini's `pageToken`; "" for the first
page); `POST …/chat/completions` streams the recorded OpenAI answer. With `key`, a request that
does not carry it in the API's header gets 401, as the real APIs answer a wrong key.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from provider_wire import data_file

ANSWER = data_file("openai/e2e_answer.sse")
KEY_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _authorized(self) -> bool:
        key = self.server.models.key
        sent = {self.headers.get(name, "").removeprefix("Bearer ") for name in KEY_HEADERS}
        return key is None or key in sent

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {name: values[0] for name, values in parse_qs(url.query).items()}
        self.server.models.gets.append((url.path, query))
        if not self._authorized():
            self._send(401, b'{"error": {"message": "invalid key"}}', "application/json")
            return
        token = query.get("after_id") or query.get("pageToken") or ""
        page = self.server.models.pages.get(url.path, {}).get(token)
        if page is None:
            self._send(404, b'{"error": "not found"}', "application/json")
            return
        self._send(200, json.dumps(page).encode(), "application/json")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.models.posts.append(self.path)
        if not self._authorized():
            self._send(401, b'{"error": {"message": "invalid key"}}', "application/json")
            return
        self._send(200, ANSWER, "text/event-stream")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    models: ModelServer


class ModelServer:
    """Serves `pages` ({path: {token: body}}) until `stop`; records what it was asked."""

    def __init__(self, pages: dict[str, dict[str, Any]], key: str | None = None) -> None:
        self.pages = pages
        self.key = key
        self.gets: list[tuple[str, dict[str, str]]] = []
        self.posts: list[str] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.models = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def openai_pages(*ids: str, prefix: str = "/v1") -> dict[str, dict[str, Any]]:
    """An OpenAI-compatible (and Ollama `/v1`) listing of `ids`."""
    return {
        f"{prefix}/models": {
            "": {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}
        }
    }
