"""Domain errors reach clients as the status codes their package's table names, on a real server."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from tobe.runtime.channel import open_channel
from tobe.runtime.server import ServiceSpec, start_server
from tobe.runtime.status import INTERNAL_MESSAGE, status_codes
from tobe.v1 import awareness_pb2 as pb
from tobe.v1 import awareness_pb2_grpc as pb_grpc

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = ("mind", "face", "hand", "awareness", "management")


class Refused(Exception):
    pass


class RefusedHarder(Refused):
    pass


class Relayed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


TABLE = {
    Refused: grpc.StatusCode.NOT_FOUND,
    RefusedHarder: grpc.StatusCode.FAILED_PRECONDITION,
    Relayed: lambda error: (grpc.StatusCode[error.code], error.message),
}
# What the probe raises, by the action a request names.
RAISES = {
    "refused": Refused("no adapter clock-1; list_adapters shows the ids"),
    "harder": RefusedHarder("the adapter is stopping"),
    "relayed": Relayed("UNAVAILABLE", "the Mind did not answer"),
    "bug": ValueError("secret=hunter2 is not a number"),
}


@status_codes(TABLE)
class Probe(pb_grpc.AwarenessServicer):
    def __init__(self) -> None:
        self.closed = asyncio.Event()

    async def Observe(self, request, context):
        if request.action == "abort":
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "aborted by the method")
        if request.action in RAISES:
            raise RAISES[request.action]
        return pb.ObserveResponse()

    async def SubscribeObservations(self, request, context):
        try:
            for seq in range(1, request.after_seq + 1):
                yield pb.SubscribeObservationsResponse(publish_seq=seq)
            raise Refused("the push stream is closed")
        finally:
            self.closed.set()


@pytest.fixture
async def served() -> AsyncIterator[tuple[Probe, pb_grpc.AwarenessStub]]:
    probe = Probe()
    spec = ServiceSpec(
        "tobe.v1.Awareness", lambda server: pb_grpc.add_AwarenessServicer_to_server(probe, server)
    )
    server = await start_server([spec], ["127.0.0.1:0"])
    channel = open_channel(f"127.0.0.1:{server.bound['127.0.0.1:0']}")
    try:
        yield probe, pb_grpc.AwarenessStub(channel)
    finally:
        await channel.close()
        await server.stop(None)


async def _status(stub: pb_grpc.AwarenessStub, action: str) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Observe(pb.ObserveRequest(action=action))
    return caught.value.code(), caught.value.details() or ""


async def test_a_listed_error_ends_the_call_with_its_code_and_message(served) -> None:
    _, stub = served
    assert await _status(stub, "refused") == (
        grpc.StatusCode.NOT_FOUND,
        "no adapter clock-1; list_adapters shows the ids",
    )


async def test_the_most_specific_listed_type_wins(served) -> None:
    _, stub = served
    assert await _status(stub, "harder") == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "the adapter is stopping",
    )


async def test_an_entry_may_give_the_code_and_message_the_error_carries(served) -> None:
    _, stub = served
    assert await _status(stub, "relayed") == (
        grpc.StatusCode.UNAVAILABLE,
        "the Mind did not answer",
    )


async def test_an_unlisted_error_is_internal_and_only_the_log_sees_it(
    served, caplog: pytest.LogCaptureFixture
) -> None:
    _, stub = served
    with caplog.at_level(logging.ERROR, logger="tobe.runtime.status"):
        code, details = await _status(stub, "bug")
    assert (code, details) == (grpc.StatusCode.INTERNAL, INTERNAL_MESSAGE)
    assert "hunter2" not in details
    (record,) = caplog.records
    assert record.getMessage() == "Probe.Observe failed"
    assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)


async def test_an_abort_inside_the_method_passes_through(served) -> None:
    _, stub = served
    assert await _status(stub, "abort") == (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "aborted by the method",
    )


async def test_a_stream_delivers_what_it_yielded_then_ends_with_the_mapped_status(
    served,
) -> None:
    probe, stub = served
    call = stub.SubscribeObservations(pb.SubscribeObservationsRequest(after_seq=2))
    received = []
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for batch in call:
            received.append(batch.publish_seq)
    assert received == [1, 2]
    assert (caught.value.code(), caught.value.details()) == (
        grpc.StatusCode.NOT_FOUND,
        "the push stream is closed",
    )
    await asyncio.wait_for(probe.closed.wait(), 5)


def test_a_class_that_is_no_generated_servicer_is_refused() -> None:
    with pytest.raises(TypeError, match="implements no generated gRPC servicer"):
        status_codes(TABLE)(type("Plain", (), {"Observe": lambda self: None}))


def _servicers() -> list[type]:
    """Every class of the process packages that implements a generated servicer."""
    found = []
    for path in sorted(p for root in PROCESSES for p in (ROOT / root).rglob("*.py")):
        if "_pb2_grpc" not in path.read_text(encoding="utf-8"):
            continue
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for _, cls in inspect.getmembers(module, inspect.isclass):
            generated = [b for b in cls.__mro__[1:] if b.__module__.endswith("_pb2_grpc")]
            if cls.__module__ == module.__name__ and generated:
                found.append(cls)
    return found


def test_every_servicer_maps_its_errors_through_a_table() -> None:
    servicers = _servicers()
    assert {cls.__name__ for cls in servicers} == {
        "AwarenessServicer",
        "FaceGatewayServicer",
        "HandLinkServicer",
        "ManagementServicer",
        "MindServicer",
        "ScriptedLink",
    }
    assert [cls.__name__ for cls in servicers if not hasattr(cls, "status_table")] == []
