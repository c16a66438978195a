"""Three Minds on one PostgreSQL database while one of them is killed with SIGKILL every few
seconds and restarted (issue 40's soak): real Mind and Hand processes, a real server.

Three Hands, each attached to a different Mind. Twenty conversations, made through the three
Minds, take messages sent through whichever Mind is up (a refused send is sent again under its
idempotency key, as a client does); each message's run calls a tool on one of the Hands, in
turn, so most calls cross from the conversation's owner to another Mind's Hand; every fourth
call has an external side effect and waits for a person's approval, decided through whichever
Mind is up. Throughout, the store is sampled: a conversation's lease has one holder, its
epoch only grows, and it never has two runs going. At the end: every acknowledged message is
stored exactly once, no call ran twice on a Hand (each appends its label to a shared log before
it works), every task has one terminal and one tool message at most, and a subscriber of each
Mind, resuming after the last event it had whenever its Mind was killed, got exactly the
store's durable events in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml
from helpers.eventually import eventually_async
from helpers.mind_events import replay_async
from helpers.mind_process import MindProcess, issue_token
from helpers.shared_database import SharedDatabase, shared_database
from helpers.store_backend import rows

from tobe.v1 import events_pb2, mind_pb2, mind_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "remote"))
from remote_processes import HandProcess

# Not in the default run: under heavy load it still finds failures (see docs/cluster.md).
pytestmark = [pytest.mark.e2e, pytest.mark.long_running]
MINDS = 3
CONVERSATIONS = 20
TURNS = 200
MAX_TURNS = 40  # scripted per conversation; the test stops well before
KILLS = 6
KILL_EVERY = 2.5
TOOL_SECONDS = 0.3
WHO = mind_pb2.OnBehalfOf(principal="alice", scopes=["chat", "approve"])
KEYS = [f"p_soak{n:02d}" for n in range(CONVERSATIONS)]

# A Hand named NAME: `peek` is read-only, `mark` has an external side effect (approved by a
# person). Each appends its label to LOG (fsync'd) before it works.
HAND = '''
import asyncio, os, sys

from hand import Hand

hand = Hand(NAME)


async def record(label: str, seconds: float) -> str:
    with open(LOG, "a") as log:
        log.write(label + "\\n")
        log.flush()
        os.fsync(log.fileno())
    await asyncio.sleep(seconds)
    return f"ran {label}"


@hand.tool(effect="read_only")
async def peek(label: str, seconds: float = 0.0) -> str:
    """Record one execution under `label`, then take `seconds`."""
    return await record(label, seconds)


@hand.tool(effect="external_side_effect")
async def mark(label: str, seconds: float = 0.0) -> str:
    """Record one execution under `label`, then take `seconds` (changes the world)."""
    return await record(label, seconds)


asyncio.run(hand.serve(sys.argv[1], os.environ["TOBE_HAND_TOKEN"]))
'''


def label(conversation: int, turn: int) -> str:
    return f"{KEYS[conversation]}.{turn}"


def script() -> str:
    """Turn `t` of conversation `c` calls hand `h{(c + t) % 3}` once with its own label."""
    runs = []
    for c, key in enumerate(KEYS):
        for turn in range(MAX_TURNS):
            tool = "mark" if turn % 4 == 3 else "peek"
            name = f"h{(c + turn) % MINDS}__{tool}"
            arguments = {"label": label(c, turn), "seconds": TOOL_SECONDS}
            runs.append(
                {
                    "match": f"^{key} turn {turn}$",
                    "steps": [
                        {"text": "On it.", "tool_calls": [{"name": name, "arguments": arguments}]},
                        {"expect": {"last_role": "tool"}, "text": f"Done {label(c, turn)}."},
                    ],
                }
            )
    return yaml.safe_dump({"runs": runs})


@pytest.fixture
def database() -> Iterator[SharedDatabase]:
    with shared_database() as shared:
        yield shared


@pytest.fixture
def minds(tmp_path: Path, database: SharedDatabase) -> Iterator[list[MindProcess]]:
    script_file = tmp_path / "script.yaml"
    script_file.write_text(script(), encoding="utf-8")
    started = [
        database.mind(
            tmp_path / f"mind-{n}",
            script_file,
            TOBE_MIND__NODE_ID=f"mind-{n}",
            TOBE_MIND__LEASE_SECONDS="2",
        )
        for n in range(MINDS)
    ]
    try:
        for mind in started:
            mind.start()
        yield started
    finally:
        for mind in started:
            mind.kill()


@pytest.fixture
def hands(
    tmp_path: Path, database: SharedDatabase, minds: list[MindProcess]
) -> Iterator[list[HandProcess]]:
    """Hand `h<n>` attached to mind `n`."""
    started: list[HandProcess] = []
    try:
        for n, mind in enumerate(minds):
            home = tmp_path / f"hand-{n}"
            (home / "workspace").mkdir(parents=True)
            program = home / "soak_hand.py"
            log = tmp_path / "executions.log"
            program.write_text(f"NAME = 'h{n}'\nLOG = {str(log)!r}\n" + HAND, encoding="utf-8")
            token = issue_token(database.url, kind="hand", principal=f"h{n}", scopes=["serve:*"])
            hand = HandProcess(mind.address, token, home / "workspace", program=program)
            hand.start()
            started.append(hand)
        for hand in started:
            hand.wait_attached()
        yield started
    finally:
        for hand in started:
            hand.kill()


# A client's channels redial a restarted Mind within half a second, each on its own
# connections: gRPC otherwise shares one per address between channels, and a new channel
# would be refused with the last failure until the shared one's back-off ran out.
_REDIAL: list[tuple[str, int]] = [
    ("grpc.use_local_subchannel_pool", 1),
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 500),
]


class Cluster:
    """The three Minds as a client sees them: one channel each, kept across restarts."""

    def __init__(self, minds: list[MindProcess]) -> None:
        self.minds = minds
        self.channels = [grpc.aio.insecure_channel(mind.address, options=_REDIAL) for mind in minds]
        self.stubs = [mind_pb2_grpc.MindStub(channel) for channel in self.channels]
        self.metadata = minds[0].gateway_metadata
        self.down: set[int] = set()

    async def call(self, method: str, request: object) -> object:
        """Through a Mind that is up, chosen at random; refused calls are made again."""
        for _ in range(200):
            index = random.choice([i for i in range(len(self.stubs)) if i not in self.down])
            try:
                return await getattr(self.stubs[index], method)(
                    request, metadata=self.metadata, timeout=15
                )
            except grpc.aio.AioRpcError as failure:
                if failure.code() not in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                ):
                    raise
                await asyncio.sleep(0.2)
        raise AssertionError(f"{method} was refused 200 times")

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()


async def _killer(cluster: Cluster, stop: asyncio.Event, kills: list[str]) -> None:
    """Every few seconds: SIGKILL one Mind, start it again on its address."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), KILL_EVERY)
        if stop.is_set():
            return
        index = random.randrange(len(cluster.minds))
        mind = cluster.minds[index]
        cluster.down.add(index)
        mind.kill()
        kills.append(mind.data_dir.name)
        await asyncio.sleep(0.5)
        await asyncio.to_thread(mind.start, mind.address)
        cluster.down.discard(index)


async def _approver(cluster: Cluster, url: str, stop: asyncio.Event, decided: set[str]) -> None:
    """A person approving every waiting request, through whichever Mind is up."""
    while not stop.is_set():
        for (approval_id,) in rows(url, "SELECT id FROM approvals WHERE decision IS NULL"):
            request = mind_pb2.DecideApprovalRequest(
                on_behalf_of=WHO, approval_id=approval_id, decision=1
            )
            with contextlib.suppress(grpc.aio.AioRpcError):
                await cluster.call("DecideApproval", request)
                decided.add(approval_id)
        await asyncio.sleep(0.2)


async def _follow(cluster: Cluster, index: int, received: list[events_pb2.Event]) -> None:
    """A subscriber of Mind `index` that resumes after its last event whenever the stream
    breaks (its Mind was killed)."""
    while True:
        after = received[-1].durable_id if received else 0
        stream = cluster.stubs[index].Subscribe(
            mind_pb2.SubscribeRequest(after_id=after), metadata=cluster.metadata
        )
        try:
            async for item in stream:
                if item.HasField("event") and item.event.durable_id:
                    received.append(item.event)
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.2)


def _leases(url: str) -> dict[str, tuple[str, int]]:
    found = rows(url, "SELECT conversation_key, node_id, epoch FROM conversation_leases")
    return {key: (node, epoch) for key, node, epoch in found}


def _unsettled(url: str, minds: list[MindProcess]) -> str:
    """What is still going, and the Minds' last lines, for a failure's message."""
    running = rows(url, "SELECT id, conversation_key, trigger FROM runs WHERE state = 'running'")
    open_tasks = rows(
        url,
        "SELECT id, tool_call_id, hand_name, state, attempt, updated_at FROM tasks "
        "WHERE state IN ('offered', 'accepted')",
    )
    leases = rows(url, "SELECT conversation_key, node_id, epoch FROM conversation_leases")
    lines = [f"running: {running}", f"open tasks: {open_tasks}", f"leases: {leases}"]
    for mind in minds:
        exit_code = mind.process.poll() if mind.process is not None else None
        lines += [f"--- {mind.data_dir.name} (exit code {exit_code})", *mind.output[-30:]]
    return "\n".join(lines)


def _settled(url: str) -> bool:
    """No run running, no task open."""
    running = rows(url, "SELECT count(*) FROM runs WHERE state = 'running'")
    open_tasks = rows(url, "SELECT count(*) FROM tasks WHERE state IN ('offered', 'accepted')")
    return running == [(0,)] and open_tasks == [(0,)]


async def test_three_minds_killed_in_turn_lose_nothing_and_run_no_call_twice(
    tmp_path: Path,
    minds: list[MindProcess],
    hands: list[HandProcess],
    database: SharedDatabase,
) -> None:
    cluster = Cluster(minds)
    url = database.url
    stop, kills = asyncio.Event(), []
    followed: list[list[events_pb2.Event]] = [[] for _ in minds]
    followers = [
        asyncio.create_task(_follow(cluster, n, received)) for n, received in enumerate(followed)
    ]
    acknowledged: list[str] = []
    decided: set[str] = set()
    epochs: dict[str, int] = {}
    samples: list[int] = []
    try:
        for n, key in enumerate(KEYS):
            request = mind_pb2.CreateConversationRequest(on_behalf_of=WHO, key=key)
            await cluster.stubs[n % MINDS].CreateConversation(
                request, metadata=cluster.metadata, timeout=15
            )
        killer = asyncio.create_task(_killer(cluster, stop, kills))
        approver = asyncio.create_task(_approver(cluster, url, stop, decided))

        async def conversation(key: str) -> None:
            turn = 0
            # Each conversation goes on until enough turns were taken across enough kills.
            while len(acknowledged) < TURNS or len(kills) < KILLS:
                assert turn < MAX_TURNS, "the script ran out of turns"
                text = f"{key} turn {turn}"
                await cluster.call(
                    "SendChat",
                    mind_pb2.SendChatRequest(
                        on_behalf_of=WHO,
                        conversation_key=key,
                        text=text,
                        idempotency_key=f"{key}-{turn}",
                    ),
                )
                acknowledged.append(text)
                turn += 1
                await eventually_async(
                    lambda: rows(
                        url,
                        "SELECT count(*) FROM runs WHERE conversation_key = ? "
                        "AND state = 'running'",
                        key,
                    ),
                    until=lambda found: found == [(0,)],
                    timeout=90,
                    what=f"{key} idle",
                )

        async def sample() -> None:
            """A lease's epoch never goes back, whoever holds it, and no conversation ever
            has two runs going (which two Minds acting on it at once would show)."""
            while not stop.is_set():
                for key, (_node, epoch) in (await asyncio.to_thread(_leases, url)).items():
                    assert epoch >= epochs.get(key, 0), (key, epoch, epochs.get(key))
                    epochs[key] = epoch
                doubled = await asyncio.to_thread(
                    rows,
                    url,
                    "SELECT conversation_key FROM runs WHERE state = 'running' "
                    "GROUP BY conversation_key HAVING count(*) > 1",
                )
                assert doubled == [], doubled
                samples.append(len(epochs))
                await asyncio.sleep(0.2)

        sampler = asyncio.create_task(sample())
        await asyncio.gather(*(conversation(key) for key in KEYS))
        stop.set()
        await killer
        await sampler
        await approver
        assert len(kills) >= KILLS, kills
        assert len(samples) >= 50 and max(epochs.values()) > 1, (len(samples), epochs)
        assert all(mind.process is not None and mind.process.poll() is None for mind in minds)
        await eventually_async(
            lambda: _settled(url),
            timeout=90,
            what="every run and task to end",
            context=lambda: _unsettled(url, minds),
        )

        # Every acknowledged message is stored once (a resent one was not stored again).
        stored = rows(url, "SELECT text FROM messages WHERE role = 'user'")
        assert sorted(text for (text,) in stored) == sorted(acknowledged)
        assert len(acknowledged) >= TURNS

        # No call ran twice on a Hand; each call has one task, one terminal, one tool message.
        executions = Counter((tmp_path / "executions.log").read_text().split())
        assert executions and max(executions.values()) == 1, executions.most_common(3)
        tasks = rows(url, "SELECT tool_call_id, state, hand_name FROM tasks")
        assert max(Counter(call for call, _, _ in tasks).values()) == 1
        tool_messages = rows(
            url,
            "SELECT payload->>'tool_call_id' FROM messages WHERE role = 'tool' "
            "GROUP BY payload->>'tool_call_id' HAVING count(*) > 1",
        )
        assert tool_messages == []
        succeeded = [call for call, state, _ in tasks if state == "succeeded"]
        answers = rows(url, "SELECT text FROM messages WHERE role = 'tool' AND text LIKE 'ran %'")
        assert len(answers) == len(succeeded)
        for (text,) in answers:
            assert executions[text.removeprefix("ran ")] == 1
        # Most calls crossed Minds and succeeded; the approvals were decided through them.
        assert len(succeeded) >= len(acknowledged) // 2, Counter(s for _, s, _ in tasks)
        assert {name for _, _, name in tasks} == {"h0", "h1", "h2"}
        assert len(decided) >= TURNS // 8

        # Every subscriber got exactly what the store holds, in order, across the restarts.
        async with grpc.aio.insecure_channel(minds[0].address, options=_REDIAL) as channel:
            await asyncio.wait_for(channel.channel_ready(), 30)
            truth, _ = await replay_async(mind_pb2_grpc.MindStub(channel), cluster.metadata)
        for received in followed:
            await eventually_async(
                lambda received=received: len(received),
                until=lambda count: count >= len(truth),
                what="the subscriber to catch up",
            )
            assert [e.durable_id for e in received] == [e.durable_id for e in truth]
            assert received == truth
    except BaseException:
        await asyncio.sleep(1)  # a Mind going down has said why
        print(_unsettled(url, minds))  # shown with the failure
        raise
    finally:
        stop.set()
        for mind in minds:  # kept with the test's files
            (tmp_path / f"{mind.data_dir.name}.log").write_text("\n".join(mind.output))
        for follower in followers:
            follower.cancel()
        await cluster.close()
