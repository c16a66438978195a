"""A deterministic local "model" on the OpenAI-compatible wire, for the decision layer's tests
and its cost benchmark.

A real HTTP server (stdlib, in a thread) answering `POST …/chat/completions` as a stream:

- a request whose `response_format` asks for JSON (`json_schema` or `json_object`) is answered
  with the smallest JSON object valid against the schema the request carries (in
  `response_format`, else in the system prompt), as a server holding the model to it would;
- a request whose system prompt asks for JSON without a `response_format` (the decision
  stages on a model without structured output) is answered as a small model does: prose first;
  corrected (the conversation holds its earlier answer), the JSON amid prose;
- anything else (a chat turn) gets a short prose answer.

Every answer reports `usage` deterministically: ceil(bytes / 4) of the request's `messages` and
`tools` (as JSON: what the model reads) for the prompt, and of the answer's text for the
completion. Each request's body is
kept in `requests`.
"""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# How the decision stages' system prompt introduces its schema (`mind.actions.structured`).
SCHEMA_MARK = "valid against this JSON Schema:"
CHAT_ANSWER = "A plain answer to an ordinary message."
PROSE_ANSWER = "Sure! Nothing in this message asks me to do anything."


def tokens(text: str) -> int:
    return math.ceil(len(text.encode()) / 4)


def prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt's tokens as this server counts them (module docstring)."""
    return tokens(json.dumps(body.get("messages", []))) + tokens(json.dumps(body.get("tools", [])))


def smallest(schema: dict[str, Any]) -> Any:
    """The smallest value valid against `schema` (the subset the stages use)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: smallest(properties[name]) for name in schema.get("required", [])}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return "x" * schema.get("minLength", 0)


def _prompted_schema(system: str) -> dict[str, Any] | None:
    at = system.find(SCHEMA_MARK)
    if at == -1:
        return None
    schema, _ = json.JSONDecoder().raw_decode(system, system.index("{", at))
    return dict(schema)


def answer(body: dict[str, Any]) -> str:
    """What the model says to a request (module docstring)."""
    messages = body.get("messages", [])
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    prompted = _prompted_schema(system)
    wanted = body.get("response_format") or {}
    if wanted.get("type") == "json_schema":
        return json.dumps(smallest(wanted["json_schema"]["schema"]))
    if wanted.get("type") == "json_object" and prompted is not None:
        return json.dumps(smallest(prompted))
    if prompted is None:
        return CHAT_ANSWER
    corrected = any(m.get("role") == "assistant" for m in messages)
    if not corrected:
        return PROSE_ANSWER
    return f"Here is the JSON you asked for: {json.dumps(smallest(prompted))} Hope it helps."


def _stream(model: str, text: str, prompt_tokens: int) -> bytes:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {
            "choices": [],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": tokens(text),
                "total_tokens": prompt_tokens + tokens(text),
            },
        },
    ]
    lines = [f"data: {json.dumps({'model': model, **chunk})}\n\n" for chunk in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.server.model.record(body)
        text = answer(body)
        payload = _stream(body.get("model", ""), text, prompt_tokens(body))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: JsonModelServer


class JsonModelServer:
    """Serves until `stop`; `url` is the base URL (`…/v1`) to configure."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.model = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def start(self) -> JsonModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def is_stage(body: dict[str, Any]) -> bool:
    """Whether a request is one of the decision layer's stages."""
    system = next((m["content"] for m in body.get("messages", []) if m["role"] == "system"), "")
    return SCHEMA_MARK in system
