"""A local HTTP server that plays recorded provider responses and records the requests.

A real socket server (stdlib `http.server` in a thread) so the adapters run their whole
httpx path: connection, status handling, chunked bodies written chunk by chunk with flushes,
connections dropped mid-body, and disconnects. It can keep a stream open until the client
goes away and says when it saw the disconnect.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).with_name("data")
FIXTURES = Path(__file__).with_name("fixtures")
SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}


def data_file(name: str) -> bytes:
    return (DATA / name).read_bytes()


def fixture_file(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def cassette_bodies(name: str) -> list[bytes]:
    """Response bodies of a VCR cassette, decoded the way VCR.py replays them."""
    cassette = yaml.safe_load((DATA / name).read_text(encoding="utf-8"))
    return [item["response"]["body"]["string"].encode() for item in cassette["interactions"]]


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *sorted(set(c for c in cuts if 0 < c < len(data))), len(data)]
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: dict(SSE))
    # Body pieces written one by one with a flush after each; default: the body in one piece.
    chunks: list[bytes] | None = None
    # After the pieces, keep the response open until the client disconnects.
    hold_open: bool = False
    # After the pieces, close the connection without ending the chunked body (a cut-off).
    drop: bool = False
    # Send nothing at all, not even the status line, until the client disconnects (a model
    # server that accepted the connection and stopped answering).
    silent: bool = False
    # Seconds to wait before each piece (a slow but steady stream).
    pause: float = 0.0


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        wire = self.server.wire
        wire.record(
            Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        reply = wire.next_reply()
        if reply.silent:
            self._wait_for_disconnect()
            self.close_connection = True
            return
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for piece in reply.chunks if reply.chunks is not None else [reply.body]:
                if reply.pause:
                    time.sleep(reply.pause)
                if piece:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
            if reply.hold_open:
                self._wait_for_disconnect()
                self.close_connection = True
                return
            if reply.drop:
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            wire.disconnected.set()
            self.close_connection = True

    def _wait_for_disconnect(self) -> None:
        wire = self.server.wire
        while not wire.stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        wire.disconnected.set()
                        return
                except OSError:
                    wire.disconnected.set()
                    return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    wire: WireServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing its keep-alive connection is normal, not a server failure.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class WireServer:
    """Plays queued replies in order; `requests` holds what each request looked like."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.wire = self
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        self.disconnected = threading.Event()
        self.stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def play(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def record(self, received: Received) -> None:
        with self._lock:
            self.requests.append(received)

    def next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return Reply(500, b'{"error": {"message": "no reply queued"}}', dict(JSON))

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
