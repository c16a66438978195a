"""HandLink over real gRPC: the Mind side (servicer, Authority, Registry) with SDK Hands."""

from __future__ import annotations

import asyncio
import contextlib
import json

import grpc
import pytest
from helpers.eventually import eventually_async
from remote_harness import AUDIENCES, CONVERSATION, Link, tool_context

from hand import Hand, HandRefused, report_progress
from mind.remote.model import TaskState
from mind.tools.base import ApprovalBinding, ApprovalSource
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.runtime.digest import arguments_digest
from tobe.v1 import hand_pb2, hand_pb2_grpc


def echo_hand(name: str = "laptop") -> Hand:
    hand = Hand(name)

    @hand.tool
    async def echo(text: str, times: int = 1) -> dict[str, str]:
        """Repeat a text."""
        report_progress("echoing", 0.5)
        return {"echo": text * times}

    return hand


async def terminals(link: Link, task_id: str) -> list[str]:
    return [t.to_state for t in await link.remote.registry.transitions(task_id) if t.terminal]


async def only_task(link: Link) -> str:
    from sqlalchemy import select

    from mind.store.models import Task

    ids = await link.database.read(lambda session: session.scalars(select(Task.id)).all())
    assert len(ids) == 1
    return ids[0]


async def test_hand_tool_call_reports_progress_and_result(link: Link, serve) -> None:
    await serve(echo_hand(), link.target, link.token)
    progress: list[tuple[str, float | None]] = []
    tool = link.tool("laptop__echo")
    assert tool.parameters["required"] == ["text"]
    outcome = await tool.run({"text": "hi", "times": 2}, tool_context(progress))
    assert outcome.ok and json.loads(outcome.output) == {"echo": "hihi"}
    assert progress == [("echoing", 0.5)]
    task_id = await only_task(link)
    assert await terminals(link, task_id) == ["succeeded"]


async def test_tools_of_two_hands_never_clash(link: Link, serve) -> None:
    _, other_token = await link.issue(principal="desktop")
    await serve(echo_hand("laptop"), link.target, link.token)
    await serve(echo_hand("desktop"), link.target, other_token)
    names = sorted(t.name for t in link.remote.tools.tools_for(CONVERSATION))
    assert names == ["desktop__echo", "laptop__echo"]


async def test_a_hand_serves_only_the_conversations_of_principals_its_credential_names(
    link: Link, serve
) -> None:
    _, own_token = await link.issue(principal="bobs-box", scopes=())
    await serve(echo_hand("bobs-box"), link.target, own_token)
    await serve(echo_hand("laptop"), link.target, link.token)
    AUDIENCES["p_bob"] = ["bob", "bobs-box"]
    try:
        alice = sorted(t.name for t in link.remote.tools.tools_for(CONVERSATION))
        bob = sorted(t.name for t in link.remote.tools.tools_for("p_bob"))
    finally:
        del AUDIENCES["p_bob"]
    assert alice == ["laptop__echo"]
    assert bob == ["bobs-box__echo"]
    assert link.remote.tools.tools_for("p_nobody") == []


async def test_wrong_credential_is_unauthenticated(link: Link) -> None:
    with pytest.raises(HandRefused) as refused:
        await asyncio.wait_for(echo_hand().serve(link.target, "tobe_nope_notavalidsecret"), 10)
    assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED


async def test_client_credential_is_unauthenticated(link: Link) -> None:
    _, token = await link.issue(kind="client", principal="alice")
    with pytest.raises(HandRefused) as refused:
        await asyncio.wait_for(echo_hand().serve(link.target, token), 10)
    assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED


async def test_revoked_credential_closes_the_stream_at_once(link: Link, serve) -> None:
    from mind.credentials import revoke

    job = await serve(echo_hand(), link.target, link.token)
    await link.database.write(lambda tx: revoke(tx.session, link.credential_id))
    assert link.live_calls.revoke(link.credential_id) == 1
    with pytest.raises(HandRefused) as refused:
        await asyncio.wait_for(job, 10)
    assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert link.remote.tools.tools_for(CONVERSATION) == []


async def test_policy_rejection_is_the_tool_result(link: Link, serve) -> None:
    hand = echo_hand()
    hand.policy = lambda offer: "not on this device" if offer.arguments["text"] == "x" else None
    await serve(hand, link.target, link.token)
    outcome = await link.tool("laptop__echo").run({"text": "x"}, tool_context())
    assert not outcome.ok and outcome.display_status == "denied"
    assert "not on this device" in outcome.error
    assert await terminals(link, await only_task(link)) == ["rejected"]


PERSON = ApprovalSource.PERSON


async def test_offer_whose_arguments_differ_from_the_approval_is_rejected(
    link: Link, serve
) -> None:
    await serve(echo_hand(), link.target, link.token)
    approval = ApprovalBinding(PERSON, arguments_digest({"text": "approved"}), "ap_1")
    outcome = await link.tool("laptop__echo").run(
        {"text": "something else"}, tool_context(approval=approval)
    )
    assert not outcome.ok and "digest" in outcome.error
    matching = ApprovalBinding(PERSON, arguments_digest({"text": "approved"}), "ap_2")
    ok = await link.tool("laptop__echo").run(
        {"text": "approved"}, tool_context(approval=matching, call_id="call_2")
    )
    assert ok.ok


async def test_cancelled_call_cancels_the_hand_coroutine(link: Link, serve) -> None:
    hand = Hand("laptop")
    started, stopped = asyncio.Event(), asyncio.Event()

    @hand.tool
    async def wait_forever() -> str:
        """Never returns on its own."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return "unreachable"

    await serve(hand, link.target, link.token)
    call = asyncio.create_task(link.tool("laptop__wait_forever").run({}, tool_context()))
    await asyncio.wait_for(started.wait(), 10)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert stopped.is_set()
    task = await link.remote.registry.get(await only_task(link))
    assert task is not None and task.state is TaskState.CANCELLED
    assert task.cancel_requested_at is not None


async def test_frames_for_a_task_never_offered_are_refused(link: Link, serve) -> None:
    await serve(echo_hand(), link.target, link.token)
    await link.tool("laptop__echo").run({"text": "mine"}, tool_context())
    task_id = await only_task(link)
    before = await link.remote.registry.transitions(task_id)
    _, intruder_token = await link.issue(principal="intruder")
    async with open_channel(link.target) as channel:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(intruder_token))
        await call.write(hand_pb2.AttachRequest(hello=hand_pb2.HandHello(name="intruder")))
        assert (await call.read()).WhichOneof("frame") == "welcome"
        acks = []
        for frame in (
            hand_pb2.AttachRequest(result=hand_pb2.TaskResult(task_id=task_id, attempt=1, ok=True)),
            hand_pb2.AttachRequest(accepted=hand_pb2.TaskAccepted(task_id="t_never", attempt=1)),
        ):
            await call.write(frame)
            acks.append((await call.read()).ack.status)
        call.cancel()
    assert acks == [hand_pb2.ACK_STATUS_UNKNOWN_TASK, hand_pb2.ACK_STATUS_UNKNOWN_TASK]
    assert await link.remote.registry.transitions(task_id) == before


async def test_hello_with_invalid_tool_name_is_invalid_argument(link: Link) -> None:
    async with open_channel(link.target) as channel:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
        hello = hand_pb2.HandHello(name="laptop", tools=[hand_pb2.ToolSpec(name="Bad Name")])
        await call.write(hand_pb2.AttachRequest(hello=hello))
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await call.read()
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "hello.tools[0].name" in (failed.value.details() or "")


async def test_background_tool_returns_at_once_and_delivers_its_result(link: Link, serve) -> None:
    hand = Hand("laptop")
    release = asyncio.Event()

    @hand.tool(background=True)
    async def build() -> str:
        """A long job."""
        await release.wait()
        return "built"

    await serve(hand, link.target, link.token)
    outcome = await link.tool("laptop__build").run({}, tool_context())
    started = json.loads(outcome.output)
    assert outcome.ok and started["status"] == "started" and link.sink == []
    release.set()
    await eventually_async(lambda: link.sink, 10, what="the background task's result delivered")
    assert [(r.id, r.state, r.output) for r in link.sink] == [
        (started["task_id"], TaskState.SUCCEEDED, "built")
    ]


async def _attach(link: Link, token: str, *frames: hand_pb2.AttachRequest) -> None:
    """Send frames, then read until the stream ends (raising its status when not OK)."""
    async with open_channel(link.target) as channel:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(token))
        for frame in frames:
            await call.write(frame)
        while await call.read() is not grpc.aio.EOF:
            pass


def _hello(name: str) -> hand_pb2.AttachRequest:
    return hand_pb2.AttachRequest(hello=hand_pb2.HandHello(name=name))


async def test_a_hand_credential_attaches_only_under_a_name_it_was_granted(link: Link) -> None:
    # link.token: principal "laptop", no `hand:` scope; "garden" is free but not granted.
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _attach(link, link.token, _hello("garden"))
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "'hand:<name>' scope" in (refused.value.details() or "")
    assert link.remote.hub.get("garden") is None

    _, granted = await link.issue(principal="laptop", scopes=("serve:alice", "hand:garden"))
    for token, name in ((granted, "garden"), (link.token, "laptop"), (link.token, "")):
        async with open_channel(link.target) as channel:
            call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(token))
            await call.write(_hello(name))
            assert (await call.read()).welcome.hand_name == (name or "laptop")
            call.cancel()


async def test_a_second_hello_ends_the_stream_with_failed_precondition(link: Link) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as ended:
        await _attach(link, link.token, _hello("laptop"), _hello("laptop"))
    assert ended.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "hello may be sent only once" in (ended.value.details() or "")


async def test_a_slow_report_of_one_task_never_holds_back_another_tasks(
    link: Link, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reports of different tasks on one stream are applied independently (in order within
    a task): the second task's acceptance is acknowledged while the first one's still waits."""
    from mind.remote.model import NewTask
    from mind.tools.base import DetailMode

    registry = link.remote.registry
    gate, real_accept = asyncio.Event(), registry.accept

    async def accept(task_id: str, attempt: int, *, hand_name: str):
        if task_id == slow:
            await gate.wait()
        return await real_accept(task_id, attempt, hand_name=hand_name)

    monkeypatch.setattr(registry, "accept", accept)
    async with open_channel(link.target) as channel:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
        tool = hand_pb2.ToolSpec(name="echo", description="echo", parameters_json_schema="{}")
        await call.write(hand_pb2.AttachRequest(hello=hand_pb2.HandHello(tools=[tool])))
        assert (await call.read()).WhichOneof("frame") == "welcome"
        offered = []
        for call_id in ("call_slow", "call_quick"):
            spec = NewTask(CONVERSATION, "run_1", call_id, "laptop", "echo", {}, DetailMode.SUMMARY)
            offered.append((await link.remote.authority.offer(spec)).task_id)
        slow, quick = offered
        for _ in offered:
            assert (await call.read()).WhichOneof("frame") == "offer"
        for task_id in (slow, quick):
            await call.write(
                hand_pb2.AttachRequest(accepted=hand_pb2.TaskAccepted(task_id=task_id, attempt=1))
            )
        first = (await asyncio.wait_for(call.read(), 10)).ack
        gate.set()
        second = (await asyncio.wait_for(call.read(), 10)).ack
        call.cancel()
    assert (first.task_id, first.status) == (quick, hand_pb2.ACK_STATUS_OK)
    assert (second.task_id, second.status) == (slow, hand_pb2.ACK_STATUS_OK)


async def test_the_welcome_lists_whom_the_hand_serves(link: Link) -> None:
    _, token = await link.issue(principal="laptop", scopes=("serve:bob", "serve:alice"))
    _, everyone = await link.issue(principal="laptop", scopes=("serve-all",))
    welcomes = []
    for credential in (token, everyone):
        async with open_channel(link.target) as channel:
            call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(credential))
            await call.write(_hello("laptop"))
            welcomes.append((await call.read()).welcome)
            call.cancel()
    assert (list(welcomes[0].serves), welcomes[0].serves_all) == (["alice", "bob", "laptop"], False)
    assert (list(welcomes[1].serves), welcomes[1].serves_all) == (["laptop"], True)
    assert welcomes[0].heartbeat_timeout_ms == 3000


async def test_each_ack_names_its_reports_kind_and_echoes_its_seq(link: Link) -> None:
    from mind.remote.model import NewTask
    from mind.tools.base import DetailMode

    async with open_channel(link.target) as channel:
        call = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
        tool = hand_pb2.ToolSpec(name="echo", description="echo", parameters_json_schema="{}")
        await call.write(hand_pb2.AttachRequest(hello=hand_pb2.HandHello(tools=[tool])))
        assert (await call.read()).WhichOneof("frame") == "welcome"
        spec = NewTask(CONVERSATION, "run_1", "call_1", "laptop", "echo", {}, DetailMode.SUMMARY)
        task_id = (await link.remote.authority.offer(spec)).task_id
        assert (await call.read()).WhichOneof("frame") == "offer"
        reports = [
            hand_pb2.AttachRequest(
                seq=7, accepted=hand_pb2.TaskAccepted(task_id=task_id, attempt=1)
            ),
            hand_pb2.AttachRequest(
                seq=8, progress=hand_pb2.TaskProgress(task_id=task_id, attempt=1, fraction=-1)
            ),
            hand_pb2.AttachRequest(
                seq=9, result=hand_pb2.TaskResult(task_id=task_id, attempt=1, ok=True)
            ),
            hand_pb2.AttachRequest(
                progress=hand_pb2.TaskProgress(task_id=task_id, attempt=1, fraction=-1)
            ),
        ]
        for report in reports:
            await call.write(report)
        acks = []
        while len(acks) < len(reports):
            frame = await asyncio.wait_for(call.read(), 10)
            if frame.WhichOneof("frame") == "ack":
                acks.append((frame.ack.kind, frame.ack.seq, frame.ack.status))
        call.cancel()
    assert acks == [
        (hand_pb2.REPORT_KIND_ACCEPTED, 7, hand_pb2.ACK_STATUS_OK),
        (hand_pb2.REPORT_KIND_PROGRESS, 8, hand_pb2.ACK_STATUS_OK),
        (hand_pb2.REPORT_KIND_RESULT, 9, hand_pb2.ACK_STATUS_OK),
        (hand_pb2.REPORT_KIND_PROGRESS, 0, hand_pb2.ACK_STATUS_ALREADY_TERMINAL),
    ]


async def test_a_hand_replaced_by_another_with_its_credential_stops_for_good(
    link: Link, serve
) -> None:
    """Two Hand processes sharing one credential and name: the newer one, asking to replace,
    takes the name over, and the replaced one stops with HandRefused(ABORTED) saying so instead
    of taking it back in a loop."""
    first_job = await serve(echo_hand(), link.target, link.token)
    first_attach = link.remote.hub.get("laptop")
    second = echo_hand()
    second_job = asyncio.create_task(second.serve(link.target, link.token, replace=True))
    try:
        with pytest.raises(HandRefused) as refused:
            await asyncio.wait_for(first_job, 10)
        assert refused.value.code == grpc.StatusCode.ABORTED
        assert "took the name 'laptop' over" in str(refused.value)
        await asyncio.wait_for(second.attached.wait(), 10)
        current = link.remote.hub.get("laptop")
        assert current is not None and current is not first_attach
        assert current.hand_id == second.hand_id, "the replaced Hand did not take the name back"
    finally:
        second_job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await second_job


async def test_a_second_hand_under_a_live_name_is_refused_and_the_first_keeps_it(
    link: Link, serve
) -> None:
    first = echo_hand()
    await serve(first, link.target, link.token)
    with pytest.raises(HandRefused) as refused:
        await asyncio.wait_for(echo_hand().serve(link.target, link.token), 10)
    assert refused.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert "'laptop' is held by a live Hand" in str(refused.value)
    assert "--replace" in str(refused.value)
    current = link.remote.hub.get("laptop")
    assert current is not None and current.hand_id == first.hand_id


def _instance_hello(instance: str, *, replace: bool = False) -> hand_pb2.AttachRequest:
    hello = hand_pb2.HandHello(name="laptop", instance_id=instance, replace=replace)
    return hand_pb2.AttachRequest(hello=hello)


async def test_a_reconnect_of_the_same_hand_instance_takes_its_own_name_back(link: Link) -> None:
    """After a network drop the Mind may still hold the Hand's old stream: the same credential
    and instance id is that Hand reconnecting, not a second Hand."""
    async with open_channel(link.target) as old, open_channel(link.target) as new:
        stale = hand_pb2_grpc.HandLinkStub(old).Attach(metadata=bearer_metadata(link.token))
        await stale.write(_instance_hello("a" * 32))
        assert (await stale.read()).WhichOneof("frame") == "welcome"
        again = hand_pb2_grpc.HandLinkStub(new).Attach(metadata=bearer_metadata(link.token))
        await again.write(_instance_hello("a" * 32))
        welcome = (await again.read()).welcome
        current = link.remote.hub.get("laptop")
        assert current is not None and current.hand_id == welcome.hand_id
        with pytest.raises(grpc.aio.AioRpcError) as left:
            while await stale.read() is not grpc.aio.EOF:
                pass
        assert left.value.code() == grpc.StatusCode.ABORTED
        assert left.value.details() == "a newer stream of this Hand attached"
        again.cancel()


async def test_another_instance_takes_a_live_name_only_when_it_asks_to_replace(
    link: Link,
) -> None:
    _, other_credential = await link.issue(principal="laptop")
    async with open_channel(link.target) as channel:
        holder = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
        await holder.write(_instance_hello("a" * 32))
        assert (await holder.read()).WhichOneof("frame") == "welcome"
        for token, instance in ((link.token, "b" * 32), (other_credential, "a" * 32)):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await _attach(link, token, _instance_hello(instance))
            assert refused.value.code() == grpc.StatusCode.ALREADY_EXISTS
            assert "is held by a live Hand" in (refused.value.details() or "")
        async with open_channel(link.target) as taker_channel:
            taker = hand_pb2_grpc.HandLinkStub(taker_channel).Attach(
                metadata=bearer_metadata(other_credential)
            )
            await taker.write(_instance_hello("b" * 32, replace=True))
            welcome = (await taker.read()).welcome
            with pytest.raises(grpc.aio.AioRpcError) as replaced:
                while await holder.read() is not grpc.aio.EOF:
                    pass
            assert replaced.value.code() == grpc.StatusCode.ABORTED
            assert f"another Hand ({welcome.hand_id}) took the name" in (
                replaced.value.details() or ""
            )
            taker.cancel()


async def test_a_hand_of_another_principal_never_replaces_a_live_one(link: Link) -> None:
    _, stranger = await link.issue(principal="desktop", scopes=("serve:alice", "hand:laptop"))
    async with open_channel(link.target) as channel:
        holder = hand_pb2_grpc.HandLinkStub(channel).Attach(metadata=bearer_metadata(link.token))
        await holder.write(_instance_hello("a" * 32))
        assert (await holder.read()).WhichOneof("frame") == "welcome"
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _attach(link, stranger, _instance_hello("b" * 32, replace=True))
        assert refused.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "another principal" in (refused.value.details() or "")
        holder.cancel()
