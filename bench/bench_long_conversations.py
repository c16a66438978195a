"""Opening a long conversation, its next turn, and the memory idle conversations hold.

A real `tobe mind serve` on a SQLite file, its store seeded before the start with
conversations of 100 and 10,000 messages in the form real turns leave them (each turn a
delivered input, a completed run, the person's message, an assistant message calling
`current_time`, the tool result, the answer, and the call's projection and audit row), the
long ones with a compaction summary every `SUMMARY_EVERY` messages that keeps the last
`SUMMARY_KEEPS` out (a 100-message conversation never reached its window, so it has none).
Their recall index is built before the start too, as the Mind builds it while turns run.
Starting the Mind on that store is the restart: no conversation's actor is loaded.

* open: what the web client does to show a conversation, the Mind's `GetSnapshot` with the
  default page, called through a real `tobe face serve` on its WebSocket (`tobe chat` makes
  the same call over gRPC), median of `--opens` per conversation, alternating sizes;
* next turn: the first `SendChat` of each conversation after the start (its actor loads the
  latest summary and the messages after it) until its run's terminal event arrives on a
  `Subscribe` stream, one per conversation, median over `--conversations` of each size.

The printed ratio is the 10,000-message median over the 100-message one (target at most 2).

Then idle actors: the Mind's RSS before and after one turn in each of `--idle` further
conversations of 100 messages (each leaves its actor loaded and idle, holding its context),
and after `--idle` more, on a fresh Mind for each setting: with the defaults (every actor
kept: the second batch's growth is what an idle actor with its context costs); with
`[mind] max_actors` a quarter of `--idle` (past the cap the least recently used idle actors
are let go, as they are after `[mind] actor_idle_seconds`: the second batch adds little); and
with a short `actor_idle_seconds`, pausing before the second batch until the first batch's
actors forgot their cached context (they stay loaded: the second batch's growth is what an
actor costs once it forgot its context, the rest reusing what they freed).

Reproduce (from the repository root):

    python bench/bench_long_conversations.py [--conversations 7] [--opens 20] [--idle 200]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import sqlalchemy as sa
from sqlalchemy.orm import Session

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mind_turns import SCRIPT, RunFollower
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, issue_token, mind_env, store_url
from helpers.web_client import WebClient

from mind.agent.actors import CONTEXT_KEPT_SHARE
from mind.context.records import SUMMARY_VERSION
from mind.recall import entries
from mind.recall.indexer import CURSOR
from mind.store import models
from mind.store.migrate import upgrade
from mind.store.models import (
    ApprovalAudit,
    Conversation,
    Input,
    Message,
    Run,
    Summary,
    ToolProjection,
)
from mind.store.outbox import head_event_id
from tobe.v1 import face_pb2, mind_pb2, mind_pb2_grpc

SHORT, LONG = 100, 10_000
SUMMARY_EVERY = 300
SUMMARY_KEEPS = 40
OWNER = "bench"
QUESTION = "What is the time where I am now, and what did we settle about the trip? " * 2
ANSWER = "It is a quarter past four; the trip is settled as we said, the train at nine. " * 3
TOOL_RESULT = '{"utc":"2026-01-01T16:15:00+00:00","timezone":"UTC","local":"16:15"}'
# The idle time of the third idle arm: long enough that no actor is let go during it, while
# the first batch's actors forget their context before the second batch.
TRIMMED_IDLE = 80.0
SUMMARY_TEXT = "The person planned a trip; dates, trains and rooms are settled. " * 20


class Seeder:
    """Writes conversations straight into a migrated store, with ids of its own choosing."""

    def __init__(self, url: str) -> None:
        self.engine = sa.create_engine(url)
        self.next_message = 1
        self.next_input = 1
        self.start = datetime(2026, 1, 1, tzinfo=UTC)

    def indexed(self) -> None:
        """Index what was written for recall, as the Mind had done it while the turns ran
        (else its first start would index the whole store)."""
        with Session(self.engine) as session:
            entries.backfill(session)
            session.add(models.Cursor(name=CURSOR, value=head_event_id(session)))
            session.commit()

    def conversation(self, key: str, messages: int) -> None:
        """`messages` (a multiple of 4) in turns of four, summarised as a long one would be."""
        rows: dict[str, list[dict[str, Any]]] = {
            "inputs": [],
            "runs": [],
            "messages": [],
            "tools": [],
            "audit": [],
        }
        first = self.next_message
        for _ in range(messages // 4):
            self._turn(key, rows)
        summaries = [
            {
                "conversation_key": key,
                "through_message_id": first + at - SUMMARY_KEEPS - 1,
                "generation": generation,
                "version": SUMMARY_VERSION,
                "text": SUMMARY_TEXT,
                "environment": "",
                "created_at": self.start,
            }
            for generation, at in enumerate(range(SUMMARY_EVERY, messages + 1, SUMMARY_EVERY), 1)
        ]
        with self.engine.begin() as connection:
            connection.execute(
                sa.insert(Conversation.__table__).values(
                    key=key, owner=OWNER, context_generation=len(summaries)
                )
            )
            connection.execute(sa.insert(Run.__table__), rows["runs"])
            connection.execute(sa.insert(Input.__table__), rows["inputs"])
            connection.execute(sa.insert(Message.__table__), rows["messages"])
            connection.execute(sa.insert(ToolProjection.__table__), rows["tools"])
            connection.execute(sa.insert(ApprovalAudit.__table__), rows["audit"])
            if summaries:
                connection.execute(sa.insert(Summary.__table__), summaries)

    def _turn(self, key: str, rows: dict[str, list[dict[str, Any]]]) -> None:
        run, call, idempotency = (
            f"run_{uuid.uuid4().hex}",
            f"call_{uuid.uuid4().hex}",
            uuid.uuid4().hex,
        )
        at = self.start + timedelta(seconds=self.next_message)
        user = self.next_message
        self.next_message += 4
        usage = {"input_tokens": 1200, "output_tokens": 40, "cached_tokens": 0}
        step = {"detail_mode": "summary", "model": "bench", "usage": usage, "thinking": []}
        calls = [
            {
                "id": call,
                "name": "current_time",
                "arguments": {"timezone": "UTC"},
                "raw_arguments": '{"timezone":"UTC"}',
                "argument_error": None,
                "thought_signature": None,
                "provider_id": "",
            }
        ]
        rows["runs"].append(
            {"id": run, "conversation_key": key, "state": "completed", "steps": 2, "usage": usage,
             "started_at": at, "finished_at": at}
        )  # fmt: skip
        rows["inputs"].append(
            {"id": self.next_input, "conversation_key": key, "idempotency_key": idempotency,
             "principal": OWNER, "text": QUESTION, "state": "delivered", "message_id": user,
             "run_id": run, "created_at": at}
        )  # fmt: skip
        user_payload = {"input_id": self.next_input, "idempotency_key": idempotency,
                        "principal": OWNER, "steer": False}  # fmt: skip
        self.next_input += 1
        tool_payload = {"tool_call_id": call, "tool_name": "current_time", "is_error": False,
                        "detail_mode": "summary", "result_summary": "succeeded, 68 chars",
                        "status": "succeeded"}  # fmt: skip
        for offset, role, text, payload in (
            (0, "user", QUESTION, user_payload),
            (1, "assistant", "checking", {**step, "step": 0, "stop_reason": "tool_use",
                                          "tool_calls": calls}),
            (2, "tool", TOOL_RESULT, tool_payload),
            (3, "assistant", ANSWER, {**step, "step": 1, "stop_reason": "stop", "tool_calls": []}),
        ):  # fmt: skip
            rows["messages"].append(
                {"id": user + offset, "conversation_key": key, "run_id": run, "role": role,
                 "text": text, "payload": payload, "created_at": at}
            )  # fmt: skip
        rows["tools"].append(
            {"tool_call_id": call, "conversation_key": key, "run_id": run, "tool": "current_time",
             "admitted_mode": "summary", "arguments_summary": "timezone=<3 chars>",
             "arguments_projection": {"version": 1, "keys": ["timezone"]}, "status": "succeeded",
             "result_summary": "succeeded, 68 chars", "admitted_at": at, "finished_at": at}
        )  # fmt: skip
        rows["audit"].append(
            {"conversation_key": key, "tool_call_id": call, "tool": "current_time",
             "source": "policy", "verdict": "allow", "principal": OWNER, "created_at": at}
        )  # fmt: skip


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class Client:
    """The Mind's API as a gateway calls it for the person `OWNER`."""

    def __init__(self, mind: MindProcess, channel: grpc.aio.Channel) -> None:
        self.stub = mind_pb2_grpc.MindStub(channel)
        self.metadata = mind.gateway_metadata
        self.who = mind_pb2.OnBehalfOf(principal=OWNER, scopes=["chat"])
        self.stream = self.stub.Subscribe(
            mind_pb2.SubscribeRequest(after_id=0), metadata=self.metadata
        )
        self.runs = RunFollower(self.stream)
        self.follower = asyncio.create_task(self.runs.follow())

    async def close(self) -> None:
        self.stream.cancel()
        self.follower.cancel()
        with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError, RuntimeError):
            await self.follower

    async def turn(self, key: str) -> None:
        idempotency_key = uuid.uuid4().hex
        request = mind_pb2.SendChatRequest(
            on_behalf_of=self.who, conversation_key=key, text="what time is it",
            idempotency_key=idempotency_key,
        )  # fmt: skip
        sent = await self.stub.SendChat(request, metadata=self.metadata)
        await self.runs.ended(sent.run_id or await self.runs.run_taking(idempotency_key))


async def timed(call: Callable[[], Awaitable[None]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


@contextmanager
def started(mind: MindProcess) -> Iterator[MindProcess]:
    mind.start()
    try:
        yield mind
    finally:
        mind.terminate()


async def open_through(browser: WebClient, key: str) -> None:
    """What the web client does to show a conversation: the Mind's `GetSnapshot` through the
    Face, with the default page."""
    call = face_pb2.MindCall(get_snapshot=mind_pb2.GetSnapshotRequest(conversation_key=key))
    reply = await browser.command(mind=call)
    assert reply.mind.get_snapshot.messages, f"{key} opened empty: {reply}"


async def opens_and_turns(
    mind: MindProcess, face: FaceProcess, token: str, conversations: int, opens: int
) -> dict[str, list[float]]:
    browser = await WebClient.connect(face.web_address, token)
    async with grpc.aio.insecure_channel(mind.address) as channel:
        client = Client(mind, channel)
        try:
            await open_through(browser, "p_warm")
            await client.turn("p_warm")
            times: dict[str, list[float]] = {
                "open 100": [],
                "open 10k": [],
                "turn 100": [],
                "turn 10k": [],
            }
            for index in range(conversations):
                short, long = f"p_short{index}", f"p_long{index}"
                for _ in range(opens):
                    times["open 100"].append(await timed(partial(open_through, browser, short)))
                    times["open 10k"].append(await timed(partial(open_through, browser, long)))
                times["turn 100"].append(await timed(partial(client.turn, short)))
                times["turn 10k"].append(await timed(partial(client.turn, long)))
            return times
        finally:
            await client.close()
            await browser.close()


async def idle_growth(mind: MindProcess, batches: list[list[str]], pause: float) -> list[float]:
    """The Mind's RSS before the first batch and after each (one turn per conversation);
    `pause` seconds before each batch after the first, then a turn that lets the actors' pool
    sweep (it looks at its idle actors only when it is used)."""
    assert mind.process is not None
    async with grpc.aio.insecure_channel(mind.address) as channel:
        client = Client(mind, channel)
        try:
            await client.turn("p_warm")
            sizes = [rss_mib(mind.process.pid)]
            for index, keys in enumerate(batches):
                if index and pause:
                    await asyncio.sleep(pause)
                    await client.turn("p_warm")
                for key in keys:
                    await client.turn(key)
                sizes.append(rss_mib(mind.process.pid))
            return sizes
        finally:
            await client.close()


def report(times: dict[str, list[float]], conversations: int, opens: int) -> None:
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"open: GetSnapshot through Face's WebSocket, median of {conversations * opens} per size")
    print(f"  {SHORT:>6} messages: {medians['open 100'] * 1000:7.2f} ms")
    print(f"  {LONG:>6} messages: {medians['open 10k'] * 1000:7.2f} ms   "
          f"ratio {medians['open 10k'] / medians['open 100']:.2f} (target <= 2)")  # fmt: skip
    print(f"next turn after the start (actor loads), median of {conversations} per size")
    print(f"  {SHORT:>6} messages: {medians['turn 100'] * 1000:7.2f} ms")
    print(f"  {LONG:>6} messages: {medians['turn 10k'] * 1000:7.2f} ms   "
          f"ratio {medians['turn 10k'] / medians['turn 100']:.2f} (target <= 2)")  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=7)
    parser.add_argument("--opens", type=int, default=20)
    parser.add_argument("--idle", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        script = Path(tmp) / "script.yaml"
        script.write_text(SCRIPT)
        url = store_url(data_dir)
        upgrade(url)
        gateway = await asyncio.to_thread(
            issue_token, url, kind="service", principal="face", scopes=["gateway"]
        )
        browser_token = await asyncio.to_thread(
            issue_token, url, kind="client", principal=OWNER, scopes=["chat"]
        )
        seeder = Seeder(url)
        seeding = time.perf_counter()
        for index in range(args.conversations):
            seeder.conversation(f"p_short{index}", SHORT)
            seeder.conversation(f"p_long{index}", LONG)
        idle = [f"p_idle{index}" for index in range(2 * args.idle)]
        for key in ["p_warm", *idle]:
            seeder.conversation(key, SHORT)
        seeder.indexed()
        seeder.engine.dispose()
        print(f"seeded {seeder.next_message - 1} messages in {time.perf_counter() - seeding:.1f} s")

        mind = MindProcess(data_dir, mind_env(data_dir, script), gateway, {})
        with started(mind):
            with running_face(mind) as face:
                times = await opens_and_turns(
                    mind, face, browser_token, args.conversations, args.opens
                )
        report(times, args.conversations, args.opens)

        batches = [idle[: args.idle], idle[args.idle :]]
        print(f"idle actors: Mind RSS at the start -> after {args.idle} conversations had a turn "
              f"-> after {args.idle} more; the second batch's growth per actor")  # fmt: skip
        cap = max(1, args.idle // 4)
        for name, setting, pause in (
            ("defaults (all kept)", {}, 0.0),
            (f"max_actors={cap}", {"TOBE_MIND__MAX_ACTORS": str(cap)}, 0.0),
            (
                f"actor_idle_seconds={TRIMMED_IDLE:.0f}, the first batch's context forgotten",
                {"TOBE_MIND__ACTOR_IDLE_SECONDS": str(TRIMMED_IDLE)},
                TRIMMED_IDLE * CONTEXT_KEPT_SHARE + 1,
            ),
        ):
            mind.env.update(setting)
            with started(mind):
                sizes = await idle_growth(mind, batches, pause)
            for key in setting:
                del mind.env[key]
            each = (sizes[2] - sizes[1]) * 1024 / args.idle
            print(f"  {name}: {sizes[0]:.1f} -> {sizes[1]:.1f} -> {sizes[2]:.1f} MiB, "
                  f"{each:.1f} KiB per actor")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
