"""Task lifecycle over real gRPC: misbehaving Hands, reconnects, losses and timeouts."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from helpers.eventually import eventually_async
from remote_harness import Link, remote_settings, tool_context

from hand import Hand
from hand._hand import HeldTask
from mind.remote.hub import CloseReason
from mind.remote.model import TaskState
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.v1 import hand_pb2, hand_pb2_grpc


class DoubleResultHand(Hand):
    """Sends every result twice."""

    def _send_result(self, held: HeldTask) -> None:
        super()._send_result(held)
        super()._send_result(held)


class ContraryHand(Hand):
    """After its real result, sends the opposite one for the same attempt."""

    def _send_result(self, held: HeldTask) -> None:
        super()._send_result(held)
        assert held.result is not None
        contrary = hand_pb2.TaskResult()
        contrary.CopyFrom(held.result)
        contrary.ok, contrary.cancelled = held.result.cancelled, held.result.ok
        contrary.output = "contrary"
        self._send(hand_pb2.AttachRequest(result=contrary))


async def single_task(link: Link):
    from sqlalchemy import select

    from mind.store.models import Task

    ids = await link.database.read(lambda session: session.scalars(select(Task.id)).all())
    assert len(ids) == 1
    record = await link.remote.registry.get(ids[0])
    steps = await link.remote.registry.transitions(ids[0])
    return record, [s.to_state for s in steps if s.terminal]


async def refused_as_conflict(caplog: pytest.LogCaptureFixture) -> None:
    """Wait until the Mind logged that it refused a result conflicting with the recorded one."""
    await eventually_async(
        lambda: caplog.text,
        10,
        until=lambda log: "conflict" in log,
        what="a conflicting result logged as refused",
    )


def add_stubborn_tool(hand: Hand) -> asyncio.Event:
    """Give `hand` a tool `stubborn` that finishes its work even when cancelled; the returned
    event is set once it runs."""
    started = asyncio.Event()

    @hand.tool
    async def stubborn() -> str:
        """Ignores cancellation and finishes."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "finished anyway"
        return ""

    return started


async def test_result_sent_twice_makes_one_terminal(link: Link, serve, caplog) -> None:
    hand = DoubleResultHand("laptop")

    @hand.tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    await serve(hand, link.target, link.token)
    outcome = await link.tool("laptop__echo").run({"text": "once"}, tool_context())
    assert outcome.ok and outcome.output == "once"
    await refused_as_conflict(caplog)  # the second result
    record, terminals = await single_task(link)
    assert record.state is TaskState.SUCCEEDED and terminals == ["succeeded"]


async def test_success_after_a_recorded_cancel_wins_and_later_cancelled_is_refused(
    link: Link, serve, caplog: pytest.LogCaptureFixture
) -> None:
    hand = ContraryHand("laptop")
    started = add_stubborn_tool(hand)
    await serve(hand, link.target, link.token)
    call = asyncio.create_task(link.tool("laptop__stubborn").run({}, tool_context()))
    await asyncio.wait_for(started.wait(), 10)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await refused_as_conflict(caplog)  # the contrary result
    record, terminals = await single_task(link)
    assert record.cancel_requested_at is not None
    assert record.state is TaskState.SUCCEEDED and record.output == "finished anyway"
    assert terminals == ["succeeded"]


async def test_cancelled_result_first_then_success_is_refused(
    link: Link, serve, caplog: pytest.LogCaptureFixture
) -> None:
    hand = ContraryHand("laptop")
    started = asyncio.Event()

    @hand.tool
    async def obedient() -> str:
        """Stops when cancelled."""
        started.set()
        await asyncio.Event().wait()
        return ""

    await serve(hand, link.target, link.token)
    call = asyncio.create_task(link.tool("laptop__obedient").run({}, tool_context()))
    await asyncio.wait_for(started.wait(), 10)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await refused_as_conflict(caplog)  # the contrary result
    record, terminals = await single_task(link)
    assert record.state is TaskState.CANCELLED and record.output != "contrary"
    assert terminals == ["cancelled"]


@pytest.mark.parametrize("link_settings", [remote_settings(lost_grace=30)], indirect=True)
async def test_result_finished_while_disconnected_is_resent_and_accepted_once(
    link: Link, serve
) -> None:
    hand = Hand("laptop")
    started, release = asyncio.Event(), asyncio.Event()

    @hand.tool
    async def job() -> str:
        """Waits for the test."""
        started.set()
        await release.wait()
        return "survived"

    await serve(hand, link.target, link.token)
    call = asyncio.create_task(link.tool("laptop__job").run({}, tool_context()))
    await asyncio.wait_for(started.wait(), 10)
    connection = link.remote.hub.get("laptop")
    assert connection is not None
    connection.close(CloseReason.SILENT, "network dropped (test)")
    await eventually_async(lambda: not hand.attached.is_set(), 10, what="the Hand detached")
    release.set()  # finishes while the stream is down: the result waits in `held`
    outcome = await asyncio.wait_for(call, 15)
    assert outcome.ok and outcome.output == "survived"
    record, terminals = await single_task(link)
    assert terminals == ["succeeded"]


async def test_task_of_a_hand_that_does_not_come_back_is_lost_after_grace(
    link: Link, serve
) -> None:
    hand = Hand("laptop")
    started = asyncio.Event()

    @hand.tool
    async def job() -> str:
        """Never finishes."""
        started.set()
        await asyncio.Event().wait()
        return ""

    serving = await serve(hand, link.target, link.token)
    call = asyncio.create_task(link.tool("laptop__job").run({}, tool_context()))
    await asyncio.wait_for(started.wait(), 10)
    serving.cancel()
    outcome = await asyncio.wait_for(call, 10)
    assert not outcome.ok and "did not come back" in outcome.error
    record, terminals = await single_task(link)
    assert terminals == ["lost"]


@pytest.mark.parametrize("link_settings", [remote_settings(lost_grace=30)], indirect=True)
async def test_hand_that_comes_back_without_the_task_loses_it(link: Link, serve) -> None:
    first = Hand("laptop")
    started = asyncio.Event()

    @first.tool
    async def job() -> str:
        """Never finishes."""
        started.set()
        await asyncio.Event().wait()
        return ""

    serving = await serve(first, link.target, link.token)
    call = asyncio.create_task(link.tool("laptop__job").run({}, tool_context()))
    await asyncio.wait_for(started.wait(), 10)
    await accepted(link)
    serving.cancel()
    restarted = Hand("laptop")  # a new process: it holds nothing
    restarted.add_tool(first.tools["job"])
    await serve(restarted, link.target, link.token)
    outcome = await asyncio.wait_for(call, 10)
    assert not outcome.ok and "came back without this task" in outcome.error


async def accepted(link: Link) -> None:
    """Wait until the Registry recorded the Hand's `accepted` for the only task."""
    await eventually_async(
        lambda: link.remote.registry.open_tasks("laptop"),
        10,
        until=lambda tasks: bool(tasks) and tasks[0].state is TaskState.ACCEPTED,
        what="the task accepted",
    )


async def raw_attach(link: Link):
    channel = open_channel(link.target)
    call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
    tool = hand_pb2.ToolSpec(name="job", parameters_json_schema='{"type": "object"}')
    await call.write(hand_pb2.AttachRequest(hello=hand_pb2.HandHello(name="laptop", tools=[tool])))
    assert (await call.read()).WhichOneof("frame") == "welcome"
    return channel, call


@pytest.mark.parametrize(
    "link_settings", [remote_settings(accept_timeout=0.3, heartbeat_timeout=5)], indirect=True
)
async def test_unanswered_offer_times_out_and_the_hand_is_told(link: Link) -> None:
    channel, call = await raw_attach(link)
    try:
        outcome = await link.tool("laptop__job").run({}, tool_context())
        assert not outcome.ok and "accept timeout" in outcome.error
        frames = [(await call.read()).WhichOneof("frame") for _ in range(2)]
        assert frames == ["offer", "cancel"]
        record, terminals = await single_task(link)
        assert terminals == ["timed_out"]
    finally:
        call.cancel()
        await channel.close()


@pytest.mark.parametrize("link_settings", [remote_settings(heartbeat_timeout=0.3)], indirect=True)
async def test_a_silent_stream_is_pinged_then_closed_as_unavailable(link: Link) -> None:
    channel, call = await raw_attach(link)
    try:
        assert (await asyncio.wait_for(call.read(), 10)).WhichOneof("frame") == "ping"
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            await asyncio.wait_for(call.read(), 10)
        assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "no frame from the Hand for 0.3 s" in (ended.value.details() or "")
        assert link.remote.hub.get("laptop") is None
    finally:
        await channel.close()


@pytest.mark.parametrize("link_settings", [remote_settings(heartbeat_timeout=0.4)], indirect=True)
async def test_a_hand_that_sends_nothing_but_answers_pings_stays_attached(link: Link) -> None:
    """Each ping comes after half the timeout without a frame: five answered pings span more
    than two whole timeouts in which the Hand sent nothing else."""
    channel, call = await raw_attach(link)
    try:
        attached = link.remote.hub.get("laptop")
        for _ in range(5):
            assert (await asyncio.wait_for(call.read(), 10)).WhichOneof("frame") == "ping"
            await call.write(hand_pb2.AttachRequest(heartbeat=hand_pb2.Heartbeat()))
        assert attached is not None and link.remote.hub.get("laptop") is attached
    finally:
        call.cancel()
        await channel.close()
