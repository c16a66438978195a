"""Reading the Mind's Subscribe stream: its replay up to ReplayDone, or its events (replay,
then live) until a condition on them holds. Sync for `grpc` stubs, async for `grpc.aio` ones.

The stream waits for events instead of polling; its deadline is the timeout, and a stream
that times out or ends first fails the test naming what was awaited and the last events seen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc

from tobe.v1 import events_pb2, mind_pb2, mind_pb2_grpc

Events = list[events_pb2.Event]
Metadata = Sequence[tuple[str, str]]
# Whether reading stops at this item, given the events read so far (this one included).
Stop = Callable[[mind_pb2.SubscribeResponse, Events], object]
TIMEOUT = 60.0
REPLAY_TIMEOUT = 30.0


def events_until(
    stub: mind_pb2_grpc.MindStub,
    metadata: Metadata,
    done: Callable[[Events], object],
    *,
    after_id: int = 0,
    include_ephemeral: bool = False,
    timeout: float = TIMEOUT,
    what: str = "",
) -> Events:
    """Events after `after_id` until `done(events)` holds; those events."""
    request = mind_pb2.SubscribeRequest(after_id=after_id, include_ephemeral=include_ephemeral)
    stream = stub.Subscribe(request, metadata=metadata, timeout=timeout)
    events, _ = _read(stream, _when(done), what or _name(done), timeout)
    return events


async def events_until_async(
    stub: mind_pb2_grpc.MindAsyncStub,
    metadata: Metadata,
    done: Callable[[Events], object],
    *,
    after_id: int = 0,
    include_ephemeral: bool = False,
    timeout: float = TIMEOUT,
    what: str = "",
) -> Events:
    """`events_until` on an asyncio channel."""
    request = mind_pb2.SubscribeRequest(after_id=after_id, include_ephemeral=include_ephemeral)
    stream = stub.Subscribe(request, metadata=metadata, timeout=timeout)
    events, _ = await _read_async(stream, _when(done), what or _name(done), timeout)
    return events


def replay(
    stub: mind_pb2_grpc.MindStub,
    metadata: Metadata,
    after_id: int = 0,
    *,
    timeout: float = REPLAY_TIMEOUT,
) -> tuple[Events, int]:
    """Every durable event after `after_id`, and the id its ReplayDone names."""
    request = mind_pb2.SubscribeRequest(after_id=after_id)
    stream = stub.Subscribe(request, metadata=metadata, timeout=timeout)
    events, last = _read(stream, _replay_done, "ReplayDone", timeout)
    return events, last.replay_done.last_durable_id


async def replay_async(
    stub: mind_pb2_grpc.MindAsyncStub,
    metadata: Metadata,
    after_id: int = 0,
    *,
    timeout: float = REPLAY_TIMEOUT,
) -> tuple[Events, int]:
    """`replay` on an asyncio channel."""
    request = mind_pb2.SubscribeRequest(after_id=after_id)
    stream = stub.Subscribe(request, metadata=metadata, timeout=timeout)
    events, last = await _read_async(stream, _replay_done, "ReplayDone", timeout)
    return events, last.replay_done.last_durable_id


def _when(done: Callable[[Events], object]) -> Stop:
    return lambda item, events: item.HasField("event") and done(events)


def _replay_done(item: mind_pb2.SubscribeResponse, _events: Events) -> bool:
    return item.HasField("replay_done")


def _read(
    stream: grpc.Call, stop: Stop, what: str, timeout: float
) -> tuple[Events, mind_pb2.SubscribeResponse]:
    """Read until `stop` holds: the events read, and the item that stopped the reading."""
    events: Events = []
    try:
        for item in stream:
            if item.HasField("event"):
                events.append(item.event)
            if stop(item, events):
                return events, item
    except grpc.RpcError as exc:
        raise _failure(exc, events, what, timeout) from None
    finally:
        stream.cancel()
    raise AssertionError(f"the Mind ended the stream before {what}; {_seen(events)}")


async def _read_async(
    stream: grpc.aio.UnaryStreamCall, stop: Stop, what: str, timeout: float
) -> tuple[Events, mind_pb2.SubscribeResponse]:
    """`_read` on an asyncio stream."""
    events: Events = []
    try:
        async for item in stream:
            if item.HasField("event"):
                events.append(item.event)
            if stop(item, events):
                return events, item
    except grpc.aio.AioRpcError as exc:
        raise _failure(exc, events, what, timeout) from None
    finally:
        stream.cancel()
    raise AssertionError(f"the Mind ended the stream before {what}; {_seen(events)}")


def _failure(exc: grpc.RpcError, events: Events, what: str, timeout: float) -> Exception:
    """A timeout as the test failure it is; any other status as it came."""
    if exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:  # type: ignore[attr-defined]
        return exc
    return AssertionError(f"timed out after {timeout:g}s waiting for {what}; {_seen(events)}")


def _seen(events: Events, last: int = 5) -> str:
    """How many events arrived and the last few, one line each."""
    if not events:
        return "no events arrived"
    lines = [
        f"  #{e.durable_id or '-'} {e.WhichOneof('payload')} {e.conversation_key}".rstrip()
        for e in events[-last:]
    ]
    return f"{len(events)} events arrived, the last:\n" + "\n".join(lines)


def _name(done: Callable[[Events], object]) -> str:
    """A condition's name for a failure message (closures named after their factory)."""
    return getattr(done, "__qualname__", repr(done)).replace(".<locals>", "")
