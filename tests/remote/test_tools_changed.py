"""A Hand re-declares its tools while attached (`tools_changed`), over real gRPC: the Mind side
(servicer, hub, Authority, Registry) with SDK Hands changing their tools as they run."""

from __future__ import annotations

import asyncio
import logging

import grpc
import pytest
from helpers.eventually import eventually_async
from remote_harness import CONVERSATION, Link, tool_context

from hand import Hand, ToolFunction
from mind.remote.hub import CloseReason
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.v1 import hand_pb2, hand_pb2_grpc


def named_tool(name: str) -> ToolFunction:
    async def answer(text: str) -> str:
        """Answer with the tool's name and the text."""
        return f"{name} says {text}"

    return ToolFunction.wrap(answer, name=name)


def hand_with(*names: str) -> Hand:
    hand = Hand("laptop")
    for name in names:
        hand.add_tool(named_tool(name))
    return hand


def offered(link: Link) -> list[str]:
    """The Hand tools a run of the conversation starting now would be given."""
    return sorted(tool.name for tool in link.remote.tools.tools_for(CONVERSATION))


async def terminals(link: Link, task_id: str) -> list[str]:
    return [t.to_state for t in await link.remote.registry.transitions(task_id) if t.terminal]


async def test_a_tool_added_while_attached_is_offered_to_the_next_run_and_runs(
    link: Link, serve
) -> None:
    hand = hand_with("first")
    await serve(hand, link.target, link.token)
    assert offered(link) == ["laptop__first"]

    hand.add_tool(named_tool("second"))
    await eventually_async(
        lambda: offered(link),
        10,
        until=lambda names: names == ["laptop__first", "laptop__second"],
        what="the added tool offered",
    )
    outcome = await link.tool("laptop__second").run({"text": "hi"}, tool_context())
    assert outcome.ok and outcome.output == "second says hi"


async def test_a_withdrawn_tool_is_no_longer_offered_and_a_late_call_of_it_is_rejected(
    link: Link, serve
) -> None:
    hand = hand_with("first", "second")
    await serve(hand, link.target, link.token)
    # The tool as a run that started before the change holds it.
    held_by_an_earlier_run = link.tool("laptop__second")

    removed = hand.remove_tool("second")
    assert removed.name == "second"
    await eventually_async(
        lambda: offered(link),
        10,
        until=lambda names: names == ["laptop__first"],
        what="the withdrawn tool no longer offered",
    )
    outcome = await held_by_an_earlier_run.run({"text": "hi"}, tool_context())
    assert not outcome.ok and outcome.display_status == "denied"
    assert "no tool 'second'" in outcome.error
    assert await terminals(link, await _only_task(link)) == ["rejected"]


async def _only_task(link: Link) -> str:
    from sqlalchemy import select

    from mind.store.models import Task

    ids = await link.database.read(lambda session: session.scalars(select(Task.id)).all())
    assert len(ids) == 1
    return ids[0]


async def test_changes_made_in_one_turn_reach_the_mind_as_one_set_logged_by_name(
    link: Link, serve, caplog: pytest.LogCaptureFixture
) -> None:
    hand = hand_with("first", "second")
    await serve(hand, link.target, link.token)
    caplog.set_level(logging.INFO, logger="mind.remote.servicer")

    hand.remove_tool("first")
    hand.add_tool(named_tool("third"))
    hand.add_tool(named_tool("fourth"))
    await eventually_async(
        lambda: offered(link),
        10,
        until=lambda names: names == ["laptop__fourth", "laptop__second", "laptop__third"],
        what="the changed set offered",
    )
    changes = [r.getMessage() for r in caplog.records if "changed its tools" in r.getMessage()]
    assert changes == ["hand laptop changed its tools (3 now): added fourth, third; removed first"]


async def test_replacing_every_tool_offers_exactly_the_new_set(link: Link, serve) -> None:
    hand = hand_with("first", "second")
    await serve(hand, link.target, link.token)

    hand.replace_tools([named_tool("third")])
    await eventually_async(
        lambda: offered(link),
        10,
        until=lambda names: names == ["laptop__third"],
        what="only the new set offered",
    )
    hand.replace_tools([])
    await eventually_async(
        lambda: offered(link), 10, until=lambda names: names == [], what="no tool offered"
    )
    assert link.remote.hub.get("laptop") is not None, "a Hand with no tools stays attached"


def _spec(name: str, schema: str = "{}") -> hand_pb2.ToolSpec:
    return hand_pb2.ToolSpec(name=name, description="A tool.", parameters_json_schema=schema)


@pytest.mark.parametrize(
    ("tools", "field", "problem"),
    [
        ([_spec("ok"), _spec("Bad Name")], "tools_changed.tools[1].name", "must match"),
        # 15 (longest Hand name) + 2 + 48 would make a 65-character model-facing name.
        ([_spec("t" * 48)], "tools_changed.tools[0].name", "must match"),
        ([_spec("ok"), _spec("ok")], "tools_changed.tools[1].name", "declared twice"),
        ([_spec("ok", "[1, 2]")], "tools_changed.tools[0].parameters_json_schema", "JSON object"),
    ],
    ids=["bad-name", "name-too-long", "duplicate", "schema-not-an-object"],
)
async def test_an_invalid_tools_changed_ends_the_stream_invalid_argument_naming_the_field(
    link: Link, tools: list[hand_pb2.ToolSpec], field: str, problem: str
) -> None:
    async with open_channel(link.target) as channel:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
        hello = hand_pb2.HandHello(name="laptop", tools=[_spec("before")])
        await call.write(hand_pb2.AttachRequest(hello=hello))
        assert (await call.read()).WhichOneof("frame") == "welcome"
        assert offered(link) == ["laptop__before"]
        changed = hand_pb2.ToolsChanged(tools=tools)
        await call.write(hand_pb2.AttachRequest(tools_changed=changed))
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            while True:
                await call.read()
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = failed.value.details() or ""
    assert field in details and problem in details
    # The old set went with the stream, as at any ending; the invalid one was never taken.
    await eventually_async(
        lambda: offered(link), 10, until=lambda names: names == [], what="no tool offered"
    )


async def test_a_task_running_for_a_withdrawn_tool_still_completes(link: Link, serve) -> None:
    hand = hand_with("first")
    started, release = asyncio.Event(), asyncio.Event()

    @hand.tool
    async def slow(text: str) -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        return f"slow says {text}"

    await serve(hand, link.target, link.token)
    call = asyncio.create_task(link.tool("laptop__slow").run({"text": "hi"}, tool_context()))
    await asyncio.wait_for(started.wait(), 10)

    hand.remove_tool("slow")
    await eventually_async(
        lambda: offered(link),
        10,
        until=lambda names: names == ["laptop__first"],
        what="the withdrawn tool no longer offered",
    )
    release.set()
    outcome = await asyncio.wait_for(call, 10)
    assert outcome.ok and outcome.output == "slow says hi"
    assert await terminals(link, await _only_task(link)) == ["succeeded"]


async def test_a_reconnecting_hand_declares_the_tools_it_has_now(link: Link, serve) -> None:
    hand = hand_with("first")
    await serve(hand, link.target, link.token)
    hand.replace_tools([named_tool("second")])
    await eventually_async(
        lambda: offered(link),
        10,
        until=lambda names: names == ["laptop__second"],
        what="the changed set offered",
    )
    old = link.remote.hub.get("laptop")
    assert old is not None

    # Ending the stream from the Mind's side: the Hand reconnects; the new stream's tools can
    # only come from its hello (a stream starts from nothing).
    old.close(CloseReason.SHUTDOWN, "the test ends the stream")
    new = await eventually_async(
        lambda: link.remote.hub.get("laptop"),
        15,
        until=lambda connection: connection is not None and connection is not old,
        what="the Hand attached again",
    )
    assert new is not None and sorted(new.tools) == ["second"]
    assert offered(link) == ["laptop__second"]
