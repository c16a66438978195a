"""A client that goes away is dropped as CANCELLED whenever its cancellation arrives.

gRPC tells a handler that its client went away by cancelling the handler's task, once. This
test runs the real `FaceGatewayServicer.Connect` on one event loop against a stand-in for the
gRPC call, because only there can the cancellation be made to arrive at an exact point: in the
same loop iteration as a write completes, the interleaving that a loaded machine produces now
and then (`test_face_bad_input_e2e.py` checks the same guarantee through real processes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from face.connection import Identity
from face.feed import EventFeed
from face.projection import AdmissionModes
from face.servicer import FaceGatewayServicer
from tobe.config import FaceSettings
from tobe.v1 import face_pb2

HELLO = face_pb2.ConnectRequest(request_id="h", hello=face_pb2.Hello(client_name="test"))


class AuthenticatingMind:
    """The one Mind call a connection makes before its first command: authentication."""

    async def authenticate(self, token: str) -> Identity:
        return Identity("alice", ("chat",), "cred-a")


class CallGoneAtFirstWrite:
    """A gRPC call whose client cancels just as the first frame written to it completes.

    The write's completion and the handler's cancellation are delivered by one callback, as
    happens when gRPC reports both in the same turn of the event loop; the request stream then
    ends, as it does on a cancelled call.
    """

    def __init__(self) -> None:
        self.handler: asyncio.Task[None] | None = None
        self.written: list[bytes] = []
        self._gone = asyncio.Event()

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", "Bearer tobe_client_secret"),)

    def add_done_callback(self, callback: Callable[[object], None]) -> None:
        """gRPC runs these when the handler's task is done; the test awaits the task itself."""

    async def write(self, frame: bytes) -> None:
        self.written.append(frame)
        if self._gone.is_set():
            raise AssertionError("a frame was written after the client went away")
        loop = asyncio.get_running_loop()
        written = loop.create_future()

        def written_and_gone() -> None:
            written.set_result(None)
            assert self.handler is not None
            self.handler.cancel()
            self._gone.set()

        loop.call_soon(written_and_gone)
        await written

    async def requests(self) -> AsyncIterator[bytes]:
        yield HELLO.SerializeToString()
        await self._gone.wait()


async def test_a_cancellation_arriving_as_a_frame_is_written_drops_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mind: Any = AuthenticatingMind()
    feed = EventFeed(mind, AdmissionModes())
    servicer = FaceGatewayServicer(mind, feed, FaceSettings())
    call = CallGoneAtFirstWrite()
    context: Any = call
    caplog.set_level(logging.INFO, logger="face.session")
    call.handler = asyncio.create_task(servicer.Connect(call.requests(), context))

    with pytest.raises(asyncio.CancelledError):
        await call.handler
    welcome = face_pb2.ConnectResponse.FromString(call.written[0])
    assert welcome.seq == 1 and welcome.HasField("welcome")
    assert not feed.connections
    ends = [r.getMessage() for r in caplog.records if " closed: " in r.getMessage()]
    assert len(ends) == 1 and "(alice) closed: CANCELLED the client went away" in ends[0]
