"""A local embeddings server with meaning from a tiny fixed concept table, for semantic
recall's tests.

A real HTTP server (stdlib, in a thread) speaking the exact wire formats:

- OpenAI: `POST /v1/embeddings` `{"model", "input": [...]}` →
  `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
  "usage"}`;
- Ollama: `POST /api/embed` `{"model", "input": [...]}` → `{"model", "embeddings": [...]}`;
- Gemini: `POST /v1beta/models/{model}:batchEmbedContents` `{"requests": [{"model",
  "content": {"parts": [{"text"}]}}]}` → `{"embeddings": [{"values": [...]}]}`.

A text's vector counts its words in each concept of `CONCEPTS` (one dimension each): texts
about the same concept are alike although they share no word ("which restaurant" finds "we
had dinner at Trattoria"), and a text of no concept is like nothing (all zeros). `down` makes every
request fail with 503 (a server being restarted); `requests` keeps each request's path and
body.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONCEPTS: dict[str, frozenset[str]] = {
    "food": frozenset(
        "dinner lunch meal restaurant trattoria eat ate eating pasta pizza food".split()
    ),
    "water": frozenset("harbour lake sea river boat shore".split()),
    "birds": frozenset("heron egret kingfisher bird birds".split()),
    "money": frozenset("money owes debt paid loan".split()),
}
_WORD = re.compile(r"\w+")
_GEMINI = re.compile(r"^/v1beta/models/([^/:]+):batchEmbedContents$")


def vector(text: str) -> list[float]:
    words = [word.lower() for word in _WORD.findall(text)]
    return [float(sum(word in concept for word in words)) for concept in CONCEPTS.values()]


class FakeEmbeddings:
    def __init__(self) -> None:
        self.down = False
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeEmbeddings:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def texts(self) -> list[str]:
        """Every text embedded so far, in order."""
        found: list[str] = []
        for path, body in self.requests:
            if "requests" in body:
                found += [r["content"]["parts"][0]["text"] for r in body["requests"]]
            elif path.endswith(("/embeddings", "/embed")):
                found += body["input"]
        return found

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append((path, body))
        if self.down:
            return 503, {"error": {"message": "the model is loading", "type": "server_error"}}
        if path == "/v1/embeddings":
            data = [
                {"object": "embedding", "index": i, "embedding": vector(text)}
                for i, text in enumerate(body["input"])
            ]
            usage = {"prompt_tokens": 1, "total_tokens": 1}
            return 200, {"object": "list", "data": data, "model": body["model"], "usage": usage}
        if path == "/api/embed":
            return 200, {"model": body["model"], "embeddings": [vector(t) for t in body["input"]]}
        if _GEMINI.match(path):
            texts = [r["content"]["parts"][0]["text"] for r in body["requests"]]
            return 200, {"embeddings": [{"values": vector(text)} for text in texts]}
        return 404, {"error": {"message": f"no route {path}"}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                status, answer = fake.answer(self.path, body)
                raw = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *_args: object) -> None:
                pass

        return Handler
