"""The HTTP side every fake local model server shares, and one chat turn's common course.

A real HTTP server (stdlib, in a thread). A POST to `/v1/chat/completions` goes: the model
check (each server's own answer to an unknown one) → the structured-output request this server
honours (or refuses) → the prompt counted by `local_model` → the window check (a refusal in the
server's shape, or Ollama's silent truncation) → the answer, cut where `max_tokens` or the
window ends it (`finish_reason` "length") → a `ChatRecord` → the reply, streamed in the
server's chunk shape (with a final usage chunk when `stream_options.include_usage` is set, then
`data: [DONE]`) or whole. Each kind (`local_server_kinds`) fills in the shapes.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from . import local_model


@dataclass
class ChatRecord:
    """One POST to the chat endpoint, as the fake understood it."""

    model: str
    prompt_tokens: int
    max_tokens: int | None
    over_window: bool
    structured: str | None
    answered_json: bool
    body: dict[str, Any] = field(repr=False)


@dataclass
class Reply:
    """A whole HTTP answer, or a stream of SSE events when `events` is set."""

    status: int = 200
    body: Any = None
    events: list[bytes] | None = None
    content_type: str = "application/json"

    @classmethod
    def json(cls, status: int, body: Any) -> Reply:
        return cls(status=status, body=body)


@dataclass
class Turn:
    """What one chat request asked for and what the model answers."""

    model: str
    body: dict[str, Any]
    prompt_tokens: int
    max_tokens: int | None
    structured: str | None
    schema: dict[str, Any] | None
    text: str = ""
    completion_tokens: int = 0
    finish_reason: str = "stop"
    chat_id: str = ""
    created: int = 0
    evaluated_tokens: int = 0  # the prompt the model read: less than prompt_tokens if truncated

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def include_usage(self) -> bool:
        options = self.body.get("stream_options")
        return isinstance(options, dict) and bool(options.get("include_usage"))


class Refusal(Exception):
    """A request the server refuses before generating, with the server's own reply."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


def sse(obj: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj)}\n\n".encode()


DONE = b"data: [DONE]\n\n"


class LocalServer:
    """A fake of one local model server; a context manager serving from a thread."""

    kind = ""
    chat_path = "/v1/chat/completions"

    def __init__(
        self,
        *,
        model: str,
        loaded_window: int = 4096,
        max_window: int = 32768,
        port: int = 0,
        reply_chars: int = 400,
    ) -> None:
        self.model = model
        self.loaded_window = loaded_window
        self.max_window = max_window
        self.reply_chars = reply_chars
        self.chats: list[ChatRecord] = []
        self.gets: list[str] = []
        self._lock = threading.Lock()
        self._counter = 0
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.fake = self
        self.port: int = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # Hooks each kind fills in ------------------------------------------------------------

    def get(self, path: str) -> Reply | None:
        """A GET (or HEAD) this server answers; None for its 404."""
        raise NotImplementedError

    def post(self, path: str, body: Any) -> Reply | None:
        """A POST other than the chat endpoint; None for its 404."""
        return None

    def not_found(self, path: str) -> Reply:
        return Reply.json(404, {"error": f"Not Found: {path}"})

    def check_model(self, name: str) -> str:
        """The model a request's `model` names, or a Refusal in this server's shape."""
        raise NotImplementedError

    def structured_output(self, body: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
        """(mode, schema) this server honours for the request, or a Refusal."""
        raise NotImplementedError

    def admit(self, turn: Turn) -> bool:
        """Whether the turn is over the window: refused (a Refusal) or fitted to it (Ollama)."""
        raise NotImplementedError

    def generation_room(self, turn: Turn) -> int:
        """Tokens the reply may take before the window stops generation."""
        return self.loaded_window - turn.evaluated_tokens

    def chunk(self, turn: Turn, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def usage(self, turn: Turn) -> dict[str, Any]:
        return {
            "prompt_tokens": turn.evaluated_tokens,
            "completion_tokens": turn.completion_tokens,
            "total_tokens": turn.evaluated_tokens + turn.completion_tokens,
        }

    def usage_chunk(self, turn: Turn) -> dict[str, Any]:
        chunk = self.chunk(turn, {}, None)
        chunk["choices"] = []
        chunk["usage"] = self.usage(turn)
        return chunk

    def completion(self, turn: Turn) -> dict[str, Any]:
        raise NotImplementedError

    def id_prefix(self) -> str:
        return "chatcmpl-"

    # The common course of a chat turn -----------------------------------------------------

    def chat(self, body: Any) -> Reply:
        if not isinstance(body, dict):
            return Reply.json(400, {"error": {"message": "request body must be a JSON object"}})
        try:
            model = self.check_model(str(body.get("model", "")))
            structured, schema = self.structured_output(body)
        except Refusal as refusal:
            return refusal.reply
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        turn = Turn(
            model=model,
            body=body,
            prompt_tokens=local_model.prompt_tokens(messages, body.get("tools")),
            max_tokens=max_tokens if isinstance(max_tokens, int) else None,
            structured=structured,
            schema=schema,
        )
        turn.evaluated_tokens = turn.prompt_tokens
        try:
            over = self.admit(turn)
        except Refusal as refusal:
            self._record(turn, over_window=True, answered_json=False)
            return refusal.reply
        self._answer(turn)
        self._record(turn, over_window=over, answered_json=self._is_json(turn.text))
        with self._lock:
            self._counter += 1
            turn.chat_id = f"{self.id_prefix()}{self._counter:06d}"
        turn.created = int(time.time())
        if not turn.stream:
            return Reply.json(200, self.completion(turn))
        return Reply(events=list(self.stream_events(turn)), content_type="text/event-stream")

    def stream_events(self, turn: Turn) -> Iterable[bytes]:
        yield sse(self.chunk(turn, {"role": "assistant", "content": ""}, None))
        for start in range(0, len(turn.text), 40):
            yield sse(self.chunk(turn, {"content": turn.text[start : start + 40]}, None))
        yield sse(self.chunk(turn, {}, turn.finish_reason))
        if turn.include_usage:
            yield sse(self.usage_chunk(turn))
        yield DONE

    def _answer(self, turn: Turn) -> None:
        if turn.structured is not None:
            text = local_model.json_answer(turn.schema)
        else:
            text = local_model.prose(self.reply_chars)
        limit = self.generation_room(turn)
        if turn.max_tokens is not None:
            limit = min(limit, turn.max_tokens)
        if local_model.text_tokens(text) > limit:
            text = local_model.clip_to_tokens(text, limit)
            turn.finish_reason = "length"
        turn.text = text
        turn.completion_tokens = local_model.text_tokens(text)

    @staticmethod
    def _is_json(text: str) -> bool:
        try:
            json.loads(text)
        except ValueError:
            return False
        return True

    def _record(self, turn: Turn, *, over_window: bool, answered_json: bool) -> None:
        record = ChatRecord(
            model=turn.model,
            prompt_tokens=turn.prompt_tokens,
            max_tokens=turn.max_tokens,
            over_window=over_window,
            structured=turn.structured,
            answered_json=answered_json,
            body=turn.body,
        )
        with self._lock:
            self.chats.append(record)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: LocalServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        fake = self.server.fake
        path = urlsplit(self.path).path
        with fake._lock:
            fake.gets.append(path)
        self._send(fake.get(path) or fake.not_found(path))

    do_HEAD = do_GET

    def do_POST(self) -> None:
        fake = self.server.fake
        path = urlsplit(self.path).path
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._send(Reply.json(400, {"error": {"message": "invalid JSON body"}}))
            return
        if path == fake.chat_path:
            reply = fake.chat(body)
        else:
            with fake._lock:
                fake.gets.append(path)
            reply = fake.post(path, body) or fake.not_found(path)
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("content-type", reply.content_type)
        if reply.events is None:
            payload = (
                reply.body.encode()
                if isinstance(reply.body, str)
                else json.dumps(reply.body).encode()
            )
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            return
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for event in reply.events:
            self.wfile.write(event)
            self.wfile.flush()
        self.close_connection = True
