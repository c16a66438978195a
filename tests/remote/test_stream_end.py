"""How the HandLink servicer ends a stream the Mind closes."""

from __future__ import annotations

import grpc
import pytest

from mind.remote.hub import CloseFrame, CloseReason
from mind.remote.servicer import HandLinkServicer


class StatusNotSent(Exception):
    """What gRPC raises when it cannot send a status (the peer's transport is gone)."""


class DeadCallContext:
    """A call whose status can no longer be sent; `done` tells whether gRPC ended it."""

    def __init__(self, *, done: bool) -> None:
        self._done = done

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise StatusNotSent(f"{code.name}: {details}")

    def done(self) -> bool:
        return self._done


async def test_a_hand_already_gone_when_the_mind_closes_its_stream_ends_quietly() -> None:
    frame = CloseFrame(CloseReason.SHUTDOWN, "the Mind is shutting down")
    await HandLinkServicer._end(DeadCallContext(done=True), frame)  # type: ignore[arg-type]


async def test_a_status_that_fails_on_a_live_call_is_not_hidden() -> None:
    frame = CloseFrame(CloseReason.SHUTDOWN, "the Mind is shutting down")
    with pytest.raises(StatusNotSent):
        await HandLinkServicer._end(DeadCallContext(done=False), frame)  # type: ignore[arg-type]
