"""A web client that stops reading is cut off like a gRPC one: after the write timeout (or once
its bounded queue overflows) Face closes the socket 4008 "resync required", and the close frame
waits behind the unread frames instead of waiting for the client.

The client is a raw TCP socket with a tiny receive buffer, driven by the `websockets` sans-I/O
protocol: after the handshake and its commands it does not read at all until Face has given up
on it, then reads everything that was queued for it.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.face_process import MindDirect, running_face, wait_for_line
from helpers.mind_process import MindProcess, running_mind
from helpers.web_client import frame_json, parse_frame
from websockets.client import ClientProtocol
from websockets.frames import Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from tobe.v1 import face_pb2, mind_pb2

pytestmark = pytest.mark.e2e
RECEIVE_BUFFER = 4096
MESSAGES = 8
# Each message event carries this much text: together more than the kernel buffers (a loopback
# socket's send buffer grows to tcp_wmem's 4 MiB) and uvicorn's write buffer hold.
MESSAGE_CHARS = 1_000_000
SCRIPT = """
runs:
  - match: ".*"
    steps:
      - {text: "echo reply", chunks: 2}
"""


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    limit = str(MESSAGE_CHARS + 1024)
    with running_mind(tmp_path, script=script, TOBE_MIND__MAX_MESSAGE_BYTES=limit) as process:
        yield process


READ_TIMEOUT = 30.0


class RawWebSocket:
    """A blocking socket that reads only when told to."""

    def __init__(self, web_address: str, token: str) -> None:
        host, port = web_address.rsplit(":", 1)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        self.sock.settimeout(READ_TIMEOUT)
        self.sock.connect((host, int(port)))
        self.protocol = ClientProtocol(parse_uri(f"ws://{web_address}/ws"), max_size=None)
        self.frames: list[face_pb2.ConnectResponse] = []
        request = self.protocol.connect()
        request.headers["Cookie"] = f"tobe_session={token}"
        self.protocol.send_request(request)
        self._flush()
        while not any(isinstance(e, Response) for e in self._receive()):
            pass

    def send(self, request: face_pb2.ConnectRequest) -> None:
        self.protocol.send_text(frame_json(request).encode())
        self._flush()

    def read_until_closed(self) -> tuple[int, str]:
        """Read what Face queued, up to its close frame; the close code and reason."""
        while self.protocol.close_rcvd is None:
            self._receive()
        return self.protocol.close_rcvd.code, self.protocol.close_rcvd.reason

    def _receive(self) -> list[object]:
        data = self.sock.recv(65536)
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
        events = self.protocol.events_received()
        for event in events:
            if getattr(event, "opcode", None) == Opcode.TEXT:
                self.frames.append(parse_frame(event.data))  # type: ignore[attr-defined]
        self._flush()
        return events

    def _flush(self) -> None:
        for chunk in self.protocol.data_to_send():
            if chunk:
                self.sock.sendall(chunk)


async def flood(direct: MindDirect) -> None:
    """Messages with long texts, each in a conversation of its own (runs may overlap)."""
    for n in range(MESSAGES):
        key = f"p_big{n:02d}"
        await direct.create(key)
        await direct.stub.SendChat(
            mind_pb2.SendChatRequest(
                on_behalf_of=mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"]),
                conversation_key=key,
                text="x" * MESSAGE_CHARS,
                idempotency_key=f"big-{n}",
            ),
            metadata=direct.mind.gateway_metadata,
            timeout=30,
        )


async def test_a_web_client_that_stops_reading_is_closed_4008_resync_required(
    mind: MindProcess,
) -> None:
    direct = MindDirect(mind)
    with running_face(mind, queue_size="8", write_timeout="1") as face:
        raw = await asyncio.to_thread(RawWebSocket, face.web_address, mind.client_tokens["alice"])
        try:
            raw.send(face_pb2.ConnectRequest(request_id="h", hello=face_pb2.Hello()))
            raw.send(face_pb2.ConnectRequest(request_id="s", subscribe=face_pb2.SubscribeCommand()))
            await flood(direct)
            await wait_for_line(face, "RESOURCE_EXHAUSTED resync required")
            code, reason = await asyncio.to_thread(raw.read_until_closed)
        finally:
            raw.sock.close()
            await direct.close()
    assert (code, reason) == (4008, "resync required")
    seqs = [frame.seq for frame in raw.frames]
    assert seqs == list(range(1, len(seqs) + 1))
    assert raw.frames[0].HasField("welcome")
    texts = [
        f.event.message_appended.text for f in raw.frames if f.event.HasField("message_appended")
    ]
    assert texts.count("x" * MESSAGE_CHARS) < MESSAGES  # cut off before all of them reached it
