"""Restoring a conversation with a context summary costs the same whatever its history length.

For conversations of 100, 1,000 and 10,000 stored messages whose latest summary covers all but
the last `--tail` of them, each measurement opens the conversation the way an actor does at the
start of a run (`mind.context.records.load`: the latest summary, then the messages after it, on
a real SQLite file) and renders the provider view from them. The baseline is the 100-message
conversation in the same run; the printed ratio is each size's median over the baseline's.
For contrast, the same 10,000 messages are also rendered without a summary.

Reproduce:

    python bench/bench_restore.py [--repeat 30] [--tail 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

from mind.context import records
from mind.core.view import ProviderView
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.models import Conversation, Message, Summary

SIZES = (100, 1_000, 10_000)
TEXT = "A message of an ordinary length, about what the person asked and what was done. " * 3


def _fill(url: str, key: str, count: int, tail: int, summarised: bool) -> None:
    """`count` messages (user and assistant turns), and a summary of all but `tail`."""
    engine = sa.create_engine(url)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with engine.begin() as connection:
        connection.execute(sa.insert(Conversation.__table__).values(key=key, owner="bench"))
        rows = [
            {
                "conversation_key": key,
                "role": "user" if index % 2 == 0 else "assistant",
                "text": f"{index}: {TEXT}",
                "payload": {},
                "created_at": start + timedelta(seconds=index),
            }
            for index in range(count)
        ]
        connection.execute(sa.insert(Message.__table__), rows)
        if summarised:
            ids = connection.execute(
                sa.select(Message.id).where(Message.conversation_key == key).order_by(Message.id)
            ).scalars()
            through = list(ids)[-tail - 1]
            connection.execute(
                sa.insert(Summary.__table__).values(
                    conversation_key=key,
                    through_message_id=through,
                    generation=1,
                    version=records.SUMMARY_VERSION,
                    text="The person planned a trip; the details are settled. " * 20,
                    environment="",
                    created_at=start,
                )
            )
    engine.dispose()


async def _restore(database: Database, key: str) -> int:
    stored = await records.load(database, key)
    return len(ProviderView().messages(stored.messages, datetime.now(UTC), stored.summary))


async def _median(database: Database, key: str, repeat: int) -> float:
    await _restore(database, key)  # warm the statement cache and the page cache
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        await _restore(database, key)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def main(repeat: int, tail: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'bench.db'}"
        upgrade(url)
        for size in SIZES:
            _fill(url, f"p_s{size}", size, tail, summarised=True)
        _fill(url, "p_full", SIZES[-1], tail, summarised=False)
        database = Database.open(url)
        try:
            results = {size: await _median(database, f"p_s{size}", repeat) for size in SIZES}
            full = await _median(database, "p_full", repeat)
        finally:
            await database.close()
    baseline = results[SIZES[0]]
    print(f"restore with a summary (last {tail} messages after it), median of {repeat}:")
    for size, seconds in results.items():
        print(f"  {size:>6} messages: {seconds * 1000:7.3f} ms   ratio {seconds / baseline:5.2f}")
    print(
        f"  {SIZES[-1]:>6} messages without a summary: {full * 1000:7.3f} ms   "
        f"ratio {full / baseline:5.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--tail", type=int, default=40)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.repeat, arguments.tail))
