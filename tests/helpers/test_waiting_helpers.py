"""The waiting helpers return what they waited for, and fail naming it and what they last saw."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

import grpc
import pytest

from helpers.eventually import eventually, eventually_async
from helpers.mind_events import events_until, replay
from tobe.v1 import common_pb2, events_pb2, mind_pb2


def test_eventually_returns_the_value_that_held() -> None:
    counter = itertools.count()
    assert eventually(lambda: next(counter), 5, until=lambda n: n >= 3, what="3", interval=0) == 3


def test_eventually_fails_naming_what_was_awaited_the_last_value_and_the_context() -> None:
    with pytest.raises(AssertionError) as failure:
        eventually(
            lambda: ["started"],
            0.1,
            until=lambda log: "ready" in log,
            what="the ready line",
            context=lambda: "process log tail",
            interval=0.01,
        )
    assert str(failure.value) == (
        "timed out after 0.1s waiting for the ready line; last observed: ['started']\n"
        "process log tail"
    )


async def test_eventually_async_awaits_a_coroutine_condition() -> None:
    counter = itertools.count()

    async def next_value() -> int:
        return next(counter)

    assert await eventually_async(next_value, 5, until=lambda n: n == 2, what="2") == 2


async def test_eventually_async_bounds_a_condition_that_never_returns() -> None:
    async def hangs() -> bool:
        await asyncio.Event().wait()
        return True

    with pytest.raises(AssertionError, match="waiting for an answer; last observed: nothing"):
        await eventually_async(hangs, 0.1, what="an answer")


class DeadlineExceeded(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.DEADLINE_EXCEEDED


class Stream:
    """A Subscribe call that delivers `items`, then ends or, with `expire`, times out."""

    def __init__(self, items: list[mind_pb2.SubscribeResponse], expire: bool) -> None:
        self.items, self.expire, self.cancelled = items, expire, False

    def __iter__(self) -> Iterator[mind_pb2.SubscribeResponse]:
        yield from self.items
        if self.expire:
            raise DeadlineExceeded()

    def cancel(self) -> None:
        self.cancelled = True


class Stub:
    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    def Subscribe(self, request, metadata, timeout) -> Stream:
        return self.stream


def event(durable_id: int, key: str = "p_a") -> mind_pb2.SubscribeResponse:
    return mind_pb2.SubscribeResponse(
        event=events_pb2.Event(
            durable_id=durable_id,
            conversation_key=key,
            conversation_created=common_pb2.Conversation(key=key),
        )
    )


REPLAY_DONE = mind_pb2.SubscribeResponse(replay_done=mind_pb2.ReplayDone(last_durable_id=2))


def test_events_until_returns_the_events_up_to_the_one_that_made_it_hold() -> None:
    stream = Stream([event(1), REPLAY_DONE, event(2), event(3)], expire=False)
    events = events_until(Stub(stream), (), lambda evs: len(evs) == 2)  # type: ignore[arg-type]
    assert [e.durable_id for e in events] == [1, 2]
    assert stream.cancelled


def second_run_ended(events: list[events_pb2.Event]) -> bool:
    return False


def test_events_until_fails_naming_the_condition_and_the_last_events_when_time_runs_out() -> None:
    stream = Stream([event(1), event(2, "p_b")], expire=True)
    with pytest.raises(AssertionError) as failure:
        events_until(Stub(stream), (), second_run_ended, timeout=5)  # type: ignore[arg-type]
    assert str(failure.value) == (
        "timed out after 5s waiting for second_run_ended; 2 events arrived, the last:\n"
        "  #1 conversation_created p_a\n"
        "  #2 conversation_created p_b"
    )


def test_replay_ends_at_replay_done_and_a_stream_ending_first_fails() -> None:
    replayed = Stream([event(1), event(2), REPLAY_DONE, event(3)], expire=False)
    events, last = replay(Stub(replayed), ())  # type: ignore[arg-type]
    assert ([e.durable_id for e in events], last) == ([1, 2], 2)
    with pytest.raises(AssertionError, match="ended the stream before ReplayDone; 1 events"):
        replay(Stub(Stream([event(1)], expire=False)), ())  # type: ignore[arg-type]
