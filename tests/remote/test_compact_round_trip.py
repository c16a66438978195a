"""What a Hand asks for in its hello, over real gRPC with the real Mind side. Result as
acceptance (`result_accepts` in hand.proto): a Hand granted it answers a quick offer with its
result alone, a slow task is still accepted first, and a Hand that did not ask keeps the
offer → accepted → result path. Batches (`batches`): frames sent as one message are each
applied and acknowledged, and a Hand that did not ask never gets a batch."""

from __future__ import annotations

import asyncio
import json

from remote_harness import CONVERSATION, Link, tool_context

from hand import Hand
from mind.remote.model import NewTask
from mind.tools.base import DetailMode
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.v1 import hand_pb2, hand_pb2_grpc


def timed_hand(*, result_accepts: bool = True) -> Hand:
    hand = Hand("laptop", result_accepts=result_accepts)

    @hand.tool
    async def nap(seconds: float) -> str:
        """Sleep, then say so."""
        await asyncio.sleep(seconds)
        return "rested"

    return hand


async def states_of_the_only_task(link: Link) -> list[tuple[str, str]]:
    """The (from, to) states the task of the test's call went through."""
    record = await link.remote.registry.for_call("call_1")
    assert record is not None
    return [(t.from_state, t.to_state) for t in await link.remote.registry.transitions(record.id)]


async def test_a_quick_result_answers_the_offer_alone_when_the_mind_grants_it(
    link: Link, serve
) -> None:
    await serve(timed_hand(), link.target, link.token)
    outcome = await link.tool("laptop__nap").run({"seconds": 0}, tool_context())
    assert outcome.ok and outcome.output == "rested"
    assert await states_of_the_only_task(link) == [("", "offered"), ("offered", "succeeded")]


async def test_a_slow_task_is_accepted_before_its_result_when_the_mind_grants_it(
    link: Link, serve
) -> None:
    await serve(timed_hand(), link.target, link.token)
    outcome = await link.tool("laptop__nap").run({"seconds": 0.3}, tool_context())
    assert outcome.ok
    assert await states_of_the_only_task(link) == [
        ("", "offered"),
        ("offered", "accepted"),
        ("accepted", "succeeded"),
    ]


async def test_a_hand_that_does_not_ask_accepts_every_offer_first(link: Link, serve) -> None:
    await serve(timed_hand(result_accepts=False), link.target, link.token)
    outcome = await link.tool("laptop__nap").run({"seconds": 0}, tool_context())
    assert outcome.ok
    assert await states_of_the_only_task(link) == [
        ("", "offered"),
        ("offered", "accepted"),
        ("accepted", "succeeded"),
    ]


async def _result_for_an_offered_task(
    link: Link, *, asks: bool
) -> tuple[hand_pb2.HandWelcome, hand_pb2.ReportAck, str]:
    """A raw stream whose hello asks for result-as-acceptance (or not) answers an offer with a
    result alone: the welcome, the result's ack and the task's state afterwards."""
    async with open_channel(link.target) as channel:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
        tool = hand_pb2.ToolSpec(name="echo", description="echo", parameters_json_schema="{}")
        hello = hand_pb2.HandHello(tools=[tool], result_accepts=asks)
        await call.write(hand_pb2.AttachRequest(hello=hello))
        welcome = (await call.read()).welcome
        spec = NewTask(CONVERSATION, "run_1", "call_1", "laptop", "echo", {}, DetailMode.SUMMARY)
        task_id = (await link.remote.authority.offer(spec)).task_id
        assert (await call.read()).WhichOneof("frame") == "offer"
        result = hand_pb2.TaskResult(task_id=task_id, attempt=1, ok=True, output="hi")
        await call.write(hand_pb2.AttachRequest(seq=5, result=result))
        ack = (await asyncio.wait_for(call.read(), 10)).ack
        call.cancel()
    record = await link.remote.registry.get(task_id)
    assert record is not None
    return welcome, ack, record.state.value


async def test_the_mind_grants_result_as_acceptance_and_ends_an_offered_task_with_a_result(
    link: Link,
) -> None:
    welcome, ack, state = await _result_for_an_offered_task(link, asks=True)
    assert welcome.result_accepts
    assert (ack.kind, ack.seq, ack.status) == (
        hand_pb2.REPORT_KIND_RESULT,
        5,
        hand_pb2.ACK_STATUS_OK,
    )
    assert state == "succeeded"


async def test_a_result_before_accepted_stays_invalid_for_a_hand_that_did_not_ask(
    link: Link,
) -> None:
    welcome, ack, state = await _result_for_an_offered_task(link, asks=False)
    assert not welcome.result_accepts
    assert (ack.kind, ack.status) == (hand_pb2.REPORT_KIND_RESULT, hand_pb2.ACK_STATUS_INVALID)
    assert state == "offered"


async def test_progress_of_a_task_granted_result_as_acceptance_follows_its_acceptance(
    link: Link, serve
) -> None:
    """A progress report is only valid once the task is accepted: the Hand sends `accepted`
    before it, however soon the progress comes."""
    from hand import report_progress

    hand = Hand("laptop")

    @hand.tool
    async def chatty() -> str:
        """Report progress at once."""
        report_progress("started", 0.1)
        return json.dumps("done")

    await serve(hand, link.target, link.token)
    progress: list[tuple[str, float | None]] = []
    outcome = await link.tool("laptop__chatty").run({}, tool_context(progress))
    assert outcome.ok and progress == [("started", 0.1)]
    assert ("offered", "accepted") in await states_of_the_only_task(link)


async def _offers_and_acks(
    link: Link, *, asks: bool, calls: int = 8
) -> tuple[hand_pb2.HandWelcome, list[hand_pb2.AttachResponse], list[hand_pb2.ReportAck]]:
    """A raw stream whose hello asks for batches (or not) is offered `calls` tasks recorded
    together and answers them with their results in one message: the welcome, the messages
    that carried the offers, and every ack."""
    async with open_channel(link.target) as channel:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
        tool = hand_pb2.ToolSpec(name="echo", description="echo", parameters_json_schema="{}")
        hello = hand_pb2.HandHello(tools=[tool], result_accepts=True, batches=asks)
        await call.write(hand_pb2.AttachRequest(hello=hello))
        welcome = (await call.read()).welcome
        specs = [
            NewTask(CONVERSATION, "run_1", f"call_{n}", "laptop", "echo", {}, DetailMode.SUMMARY)
            for n in range(calls)
        ]
        await asyncio.gather(*(link.remote.authority.offer(spec) for spec in specs))
        messages, offers = [], []
        while len(offers) < calls:
            message = await asyncio.wait_for(call.read(), 10)
            messages.append(message)
            offers += [frame.offer for frame in (message, *message.more)]
        results = [
            hand_pb2.AttachRequest(
                seq=n + 1,
                result=hand_pb2.TaskResult(task_id=offer.task_id, attempt=1, ok=True, output="hi"),
            )
            for n, offer in enumerate(offers)
        ]
        first, *others = results
        first.more.extend(others)
        await call.write(first)
        acks: list[hand_pb2.ReportAck] = []
        while len(acks) < calls:
            message = await asyncio.wait_for(call.read(), 10)
            acks += [frame.ack for frame in (message, *message.more)]
        call.cancel()
    return welcome, messages, acks


async def test_a_batch_of_results_is_applied_and_acknowledged_frame_by_frame(link: Link) -> None:
    welcome, messages, acks = await _offers_and_acks(link, asks=True)
    assert welcome.batches
    if link.database.ids_follow_commits:
        # SQLite's one writer commits the offers in a group, so they are ready together; on
        # PostgreSQL each commits on its own and may well go alone.
        assert len(messages) < 8, "offers recorded together went as one message each"
    assert sorted(ack.seq for ack in acks) == list(range(1, 9))
    assert {ack.status for ack in acks} == {hand_pb2.ACK_STATUS_OK}
    for ack in acks:
        record = await link.remote.registry.get(ack.task_id)
        assert record is not None and record.state.value == "succeeded"


async def test_a_hand_that_does_not_ask_for_batches_gets_one_frame_per_message(
    link: Link,
) -> None:
    welcome, messages, _ = await _offers_and_acks(link, asks=False, calls=8)
    assert not welcome.batches
    assert len(messages) == 8 and not any(message.more for message in messages)


async def test_an_sdk_hand_granted_batches_answers_many_calls_in_flight(link: Link, serve) -> None:
    hand = timed_hand()
    await serve(hand, link.target, link.token)
    tool = link.tool("laptop__nap")
    outcomes = await asyncio.gather(
        *(tool.run({"seconds": 0}, tool_context(call_id=f"call_{n}")) for n in range(32))
    )
    assert all(outcome.ok and outcome.output == "rested" for outcome in outcomes)
