"""A process running only the scheduler's loop on a store, for the crash test: time from a
clock file, each delivery appended to a log file (synced) and marked started, as a proactive
run's start does.

    python scheduler_process.py STORE_URL CLOCK_FILE DELIVERY_LOG
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from mind.events.bus import EventBus
from mind.scheduler import records
from mind.scheduler.clock import FileClock
from mind.scheduler.model import FiringDelivery
from mind.scheduler.service import Scheduler
from mind.store.database import Database
from tobe.config import SchedulerSettings


async def main(url: str, clock_file: Path, log: Path) -> None:
    bus = EventBus()
    database = Database.open(url, on_commit=bus.durable_committed)

    async def deliver(firing: FiringDelivery) -> None:
        with log.open("a") as out:
            out.write(f"{firing.firing_id} {firing.due_at.isoformat()}\n")
            out.flush()
            os.fsync(out.fileno())
        await database.write(
            lambda tx: records.firing_started(tx, firing.firing_id, f"run_{firing.firing_id}")
        )

    scheduler = Scheduler(
        database, FileClock(clock_file), deliver, SchedulerSettings(max_sleep=0.02), bus
    )
    await scheduler.start()
    print("scheduler ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])))
