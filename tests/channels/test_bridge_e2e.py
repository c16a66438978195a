"""A channel between a network and real Face and Mind processes: pairing, a streamed reply, an
approval by reaction and by command, a message the agent posts by itself, the rate limit, a
revoked credential, and a restart of the channel that neither loses nor doubles anything.

The network is the test's own (`LoopTransport`, the transport contract in memory); the real
networks are tested against real servers in their own modules."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest
from helpers.admin_cli import Admin
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, issue_token, running_mind
from loop_transport import LoopTransport

from face.channels.bridge import FaceTarget, run_channel
from face.channels.state import ChannelState
from face.channels.transport import Image, Inbound
from hand import Hand, ToolOutput
from tobe.config import MatrixChannelSettings
from tobe.v1 import mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e

ROOM = "!dm:example.org"
ALICE = "@alice:example.org"
PNG = b"\x89PNG\r\n\x1a\n" + b"a-picture-" * 32
SCRIPT = """
runs:
  - match: "^remember"
    steps:
      - tool_calls: [{name: memory_write, arguments: {key: colour, text: blue}}]
      - text: "Noted."
  - match: "show me the screen"
    steps:
      - tool_calls: [{name: laptop__screen, arguments: {}}]
      - text: "That is your screen."
  - match: "what is in"
    steps:
      # The default model is blind: the image reached the Mind, which says so in its place.
      - expect: {last_contains: "[image: the current model cannot see images]"}
        text: "A picture."
  - match: ".*"
    steps:
      - text: "Hello from your agent, streamed in words."
"""


# A profile a channel may run its conversations with; its welcome shows it did.
CONCIERGE = {"name": "concierge", "platform_tools": [], "welcome": "Concierge here."}


@dataclass
class Stack:
    mind: MindProcess
    face: FaceProcess
    state: ChannelState
    transport: LoopTransport
    settings: MatrixChannelSettings

    def target(self) -> FaceTarget:
        return FaceTarget(self.face.address, None)


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with (
        running_mind(
            tmp_path,
            script=script,
            TOBE_APPROVALS__MEMORY="ask",
            TOBE_PROFILES__PROFILE=json.dumps([CONCIERGE]),
        ) as mind,
        running_face(mind, web=False) as face,
    ):
        state = ChannelState.at(tmp_path / "channels-data")
        settings = MatrixChannelSettings(enabled=True, edit_interval=0.05, messages_per_minute=8)
        try:
            yield Stack(mind, face, state, LoopTransport(), settings)
        finally:
            state.close()


@contextlib.asynccontextmanager
async def channel(stack: Stack) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(
        run_channel(stack.transport, stack.settings, stack.state, stack.target())
    )
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def until(net: LoopTransport, condition: Callable[[], object], timeout: float = 30.0) -> None:
    """Wait for `condition`; on a timeout, fail showing what every thread shows."""
    try:
        async with asyncio.timeout(timeout):
            while not condition():
                await asyncio.sleep(0.05)
    except TimeoutError:
        pytest.fail(f"not seen in {timeout} s; the threads show {net.threads_shown()}")


def said(n: int, text: str = "", **more: object) -> Inbound:
    return Inbound(id=f"$in{n}", sender=ALICE, thread=ROOM, text=text, display_name="Alice", **more)  # type: ignore[arg-type]


def pair(stack: Stack, scopes: tuple[str, ...] = ("chat", "approve")) -> None:
    """What `tobe admin channels approve CODE` does: a credential for alice, then the state."""
    [pairing] = stack.state.pending_pairings(datetime.now(UTC))
    token = issue_token(stack.mind.url, kind="client", principal="alice", scopes=list(scopes))
    stack.state.approve_pairing(
        pairing.code, "alice", f"cred-{pairing.code}", token, datetime.now(UTC)
    )


async def paired(stack: Stack) -> None:
    """Alice writes, gets her code, the owner approves it, and the channel tells her."""
    net = stack.transport
    net.say(said(1, "hi"))
    await until(net, lambda: stack.state.pending_pairings(datetime.now(UTC)))
    await asyncio.to_thread(pair, stack)
    await until(net, lambda: any("You are paired" in t for t in net.texts(ROOM)))


async def test_a_person_pairs_chats_approves_and_hears_from_the_agent(stack: Stack) -> None:
    net = stack.transport
    async with channel(stack):
        net.say(said(1, "hi there"))
        await until(net, lambda: any("pairing code" in t for t in net.texts(ROOM)))
        [prompt] = net.texts(ROOM)
        [pairing] = stack.state.pending_pairings(datetime.now(UTC))
        assert f"tobe admin channels approve {pairing.code}" in prompt

        # Writing again before the owner approved gives no second code.
        net.say(said(2, "hello?"))
        await until(net, lambda: "$in2" in net.handled_ids)
        assert len(net.texts(ROOM)) == 1

        await asyncio.to_thread(pair, stack)
        await until(net, lambda: any("You are paired" in t for t in net.texts(ROOM)))

        net.say(said(3, "how are you"))
        reply = "Hello from your agent, streamed in words."
        await until(net, lambda: reply in net.texts(ROOM))
        assert net.texts(ROOM).count(reply) == 1
        await until(net, lambda: True in net.typing_shown and net.typing_shown[-1] is False)

        # An approval, decided by a reaction to its request.
        net.say(said(4, "remember my colour"))
        await until(net, lambda: any("Approval needed" in t for t in net.texts(ROOM)))
        [request_id] = [m for m in net.threads[ROOM] if "Approval needed" in net.shown[m]]
        assert "React ✅" in net.shown[request_id]
        net.say(said(5, reaction="✅", reply_to=request_id))
        await until(net, lambda: "Noted." in net.texts(ROOM))
        await until(net, lambda: "Approved." in net.shown[request_id])

        # A second one, denied by command without replying to it (the only one waiting).
        net.say(said(6, "remember it again"))
        await until(
            net,
            lambda: any(
                "Approval needed" in net.shown[m] for m in net.threads[ROOM] if m != request_id
            ),
        )
        net.say(said(7, "!deny"))
        await until(net, lambda: any("Denied." in t for t in net.texts(ROOM)))

        # An image goes to the agent with the words.
        net.say(said(8, "what is in this", images=(Image("image/png", PNG),)))
        await until(net, lambda: "A picture." in net.texts(ROOM))

        # The agent posts by itself into the conversation: it reaches the room.
        key = stack.state.conversation_for("matrix", ROOM)
        assert key is not None
        await asyncio.to_thread(post, stack.mind, key, "Time to call mum.")
        await until(net, lambda: "Time to call mum." in net.texts(ROOM))

    texts = net.texts(ROOM)
    assert texts.count("Time to call mum.") == 1 and texts.count("A picture.") == 1


async def test_nothing_is_lost_or_doubled_when_the_channel_restarts(stack: Stack) -> None:
    net = stack.transport
    async with channel(stack):
        await paired(stack)
        net.say(said(2, "first"))
        await until(net, lambda: "Hello from your agent, streamed in words." in net.texts(ROOM))
    before = list(net.texts(ROOM))

    # While the channel is down: a message waits on the network, the agent posts one.
    net.say(said(3, "second"))
    key = stack.state.conversation_for("matrix", ROOM)
    assert key is not None
    await asyncio.to_thread(post, stack.mind, key, "Posted while you were away.")
    # And an item the channel took but never acknowledged comes again: same id, one turn.
    net.say(said(2, "first"))

    async with channel(stack):
        await until(net, lambda: "Posted while you were away." in net.texts(ROOM))
        await until(
            net, lambda: net.texts(ROOM).count("Hello from your agent, streamed in words.") == 2
        )
        await asyncio.sleep(1.0)  # anything doubled would show by now
    after = net.texts(ROOM)
    assert after[: len(before)] == before
    assert after.count("Posted while you were away.") == 1
    assert after.count("Hello from your agent, streamed in words.") == 2
    assert sum("You are paired" in t for t in after) == 1


async def test_a_sender_over_the_rate_is_told_once_and_nothing_more_is_passed_on(
    stack: Stack,
) -> None:
    stack.settings = stack.settings.model_copy(update={"messages_per_minute": 2})
    net = stack.transport
    async with channel(stack):
        for n in range(1, 6):
            net.say(said(n, f"message {n}"))
        await until(net, lambda: len(net.handled_ids) == 5)
    texts = net.texts(ROOM)
    assert sum("pairing code" in t for t in texts) == 1
    assert sum("faster than 2 messages a minute" in t for t in texts) == 1
    assert len(texts) == 2


async def test_unknown_senders_are_ignored_unless_allowed_when_told_to(stack: Stack) -> None:
    stack.settings = stack.settings.model_copy(
        update={"unknown_senders": "ignore", "allow": [ALICE]}
    )
    net = stack.transport
    async with channel(stack):
        net.say(Inbound(id="$x", sender="@mallory:evil.example", thread="!other", text="hi"))
        net.say(said(1, "hi"))
        await until(net, lambda: len(net.handled_ids) == 2)
        await until(net, lambda: net.texts(ROOM))
    assert net.texts("!other") == []
    assert [p.address for p in stack.state.pending_pairings(datetime.now(UTC))] == [ALICE]


async def test_a_group_room_is_not_answered(stack: Stack) -> None:
    net = stack.transport
    async with channel(stack):
        net.say(said(1, "hi all", direct=False))
        await until(net, lambda: net.handled_ids == ["$in1"])
    assert net.texts(ROOM) == []
    assert stack.state.pending_pairings(datetime.now(UTC)) == []


async def test_a_revoked_credential_unpairs_the_person_and_says_so(stack: Stack) -> None:
    net = stack.transport
    async with channel(stack):
        await paired(stack)
        sender = stack.state.sender("matrix", ALICE)
        assert sender is not None
        await asyncio.to_thread(revoke, stack.mind, sender.token)
        net.say(said(2, "still there?"))
        await until(net, lambda: any("access was revoked" in t for t in net.texts(ROOM)))
        assert stack.state.sender("matrix", ALICE) is None
        # Writing again starts a new pairing.
        net.say(said(3, "let me in again"))
        await until(net, lambda: sum("pairing code" in t for t in net.texts(ROOM)) == 2)


def post(mind: MindProcess, key: str, text: str) -> None:
    with grpc.insecure_channel(mind.address) as rpc:
        mind_pb2_grpc.MindStub(rpc).PostMessage(
            mind_pb2.PostMessageRequest(
                on_behalf_of=mind_pb2.OnBehalfOf(principal="alice", scopes=["post"]),
                conversation_key=key,
                text=text,
                idempotency_key=f"post-{abs(hash(text))}",
            ),
            metadata=mind.gateway_metadata,
            timeout=15,
        )


def revoke(mind: MindProcess, token: str) -> None:
    with grpc.insecure_channel(mind.address) as rpc:
        identity = (
            mind_pb2_grpc.MindStub(rpc)
            .Authenticate(mind_pb2.AuthenticateRequest(token=token), metadata=mind.gateway_metadata)
            .identity
        )
    Admin(mind.data_dir).run("credentials", "revoke", identity.credential_id)


async def test_a_picture_a_tool_returns_reaches_the_room_and_a_final_reply_comes_whole(
    stack: Stack,
) -> None:
    stack.settings = stack.settings.model_copy(update={"reply": "final"})
    hand = Hand("laptop")

    @hand.tool(effect="read_only")
    def screen() -> ToolOutput:
        """A picture of the screen."""
        return ToolOutput("the screen", images=[("image/png", PNG)])

    token = await asyncio.to_thread(
        issue_token, stack.mind.url, kind="hand", principal="laptop", scopes=["serve:alice"]
    )
    serving = asyncio.create_task(hand.serve(stack.mind.address, token))
    net = stack.transport
    try:
        await asyncio.wait_for(hand.attached.wait(), 30)
        async with channel(stack):
            net.say(said(1, "hi"))
            await until(net, lambda: stack.state.pending_pairings(datetime.now(UTC)))
            await asyncio.to_thread(pair, stack)
            await until(net, lambda: any("You are paired" in t for t in net.texts(ROOM)))
            net.say(said(2, "show me the screen"))
            await until(net, lambda: "That is your screen." in net.texts(ROOM))
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
    [picture] = [m for m in net.threads[ROOM] if net.images[m]]
    assert net.shown[picture] == "The picture a tool returned:"
    assert [(i.media_type, i.data) for i in net.images[picture]] == [("image/png", PNG)]
    assert net.edit_count == 0


async def test_the_channels_profile_runs_its_conversations(stack: Stack) -> None:
    stack.settings = stack.settings.model_copy(update={"profile": "concierge"})
    net = stack.transport
    async with channel(stack):
        net.say(said(1, "hi"))
        await until(net, lambda: stack.state.pending_pairings(datetime.now(UTC)))
        await asyncio.to_thread(pair, stack)
        await until(net, lambda: "Concierge here." in net.texts(ROOM))
