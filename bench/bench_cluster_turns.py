"""Chat turns per second with 1, 2 and 3 Minds sharing one PostgreSQL database.

The turn is `bench_mind_turns.py`'s (two Scripted provider steps and one tool call, until the
run's terminal event), with the same client concurrency in every case. Each conversation is
created through one Mind, round-robin, which then owns it; each worker sends to its
conversation's owner ("direct") or to the next Mind, which forwards the call ("forwarded"). The
baseline is one Mind on the same database server in the same run: the ratios say what sharing
the database costs (on one machine with two cores the Minds compete for the same cores and the
same server, so this is a regression figure, not a scaling claim).

Reproduce (from the repository root; any PostgreSQL server the user may create databases on):

    url=$(bash scripts/start_test_postgres.sh "$(mktemp -d)" 55432)
    python bench/bench_cluster_turns.py --server-url "$url" --seconds 10 --concurrency 12
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import uuid
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_mind_turns import SCRIPT, RunFollower, measure
from helpers.mind_process import MindProcess
from helpers.postgres import fresh_postgres_database
from helpers.shared_database import SharedDatabase, shared_database_at

from tobe.v1 import mind_pb2, mind_pb2_grpc


async def cluster_rate(
    minds: list[MindProcess], token: str, seconds: float, concurrency: int, forwarded: bool
) -> float:
    metadata = (("authorization", f"Bearer {token}"),)
    who = mind_pb2.OnBehalfOf(principal="bench", scopes=["chat"])
    channels = [grpc.aio.insecure_channel(mind.address) for mind in minds]
    stubs = [mind_pb2_grpc.MindStub(channel) for channel in channels]
    streams, followers, tasks = [], [], []
    try:
        keys = []
        for index in range(concurrency):
            owner = stubs[index % len(stubs)]
            request = mind_pb2.CreateConversationRequest(
                on_behalf_of=who, key=f"p_{uuid.uuid4().hex[:12]}"
            )
            created = await owner.CreateConversation(request, metadata=metadata)
            keys.append(created.conversation.key)
        for stub in stubs:
            stream = stub.Subscribe(mind_pb2.SubscribeRequest(after_id=0), metadata=metadata)
            follower = RunFollower(stream)
            streams.append(stream)
            followers.append(follower)
            tasks.append(asyncio.create_task(follower.follow()))

        async def turn(index: int) -> None:
            through = (index + (1 if forwarded else 0)) % len(stubs)
            idempotency_key = uuid.uuid4().hex
            sent = await stubs[through].SendChat(
                mind_pb2.SendChatRequest(
                    on_behalf_of=who,
                    conversation_key=keys[index],
                    text="what time is it",
                    idempotency_key=idempotency_key,
                ),
                metadata=metadata,
            )
            runs = followers[through]
            await runs.ended(sent.run_id or await runs.run_taking(idempotency_key))

        for index in range(concurrency):
            await turn(index)
        return await measure(turn, seconds, concurrency)
    finally:
        for stream in streams:
            stream.cancel()
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await task
        for channel in channels:
            await channel.close()


def rate(
    server_url: str, count: int, seconds: float, concurrency: int, forwarded: bool = False
) -> float:
    """Turns per second of `count` Minds on a fresh database of the server at `server_url`."""
    with tempfile.TemporaryDirectory() as tmp, fresh_postgres_database(server_url) as url:
        database: SharedDatabase = shared_database_at(url)
        script = Path(tmp) / "script.yaml"
        script.write_text(SCRIPT)
        minds = [
            database.mind(Path(tmp) / f"mind-{n}", script, TOBE_MIND__NODE_ID=f"mind-{n}")
            for n in range(count)
        ]
        try:
            for mind in minds:
                mind.start()
            return asyncio.run(
                cluster_rate(minds, database.gateway, seconds, concurrency, forwarded)
            )
        finally:
            for mind in minds:
                mind.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-url", required=True, help="a PostgreSQL server's URL")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=12)
    args = parser.parse_args()
    measured = {
        "1 Mind": rate(args.server_url, 1, args.seconds, args.concurrency),
        "2 Minds, direct": rate(args.server_url, 2, args.seconds, args.concurrency),
        "2 Minds, forwarded": rate(args.server_url, 2, args.seconds, args.concurrency, True),
        "3 Minds, direct": rate(args.server_url, 3, args.seconds, args.concurrency),
    }
    baseline = measured["1 Mind"]
    print(f"concurrency               {args.concurrency}")
    for name, turns in measured.items():
        print(f"{name:24}  {turns:8.1f} turns/s   {turns / baseline:5.2f}x of 1 Mind")


if __name__ == "__main__":
    main()
