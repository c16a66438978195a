"""A process that holds a data directory's state lock like a starting Mind, for the race tests.

Usage: python lock_holder.py DATA_DIR
Prints "locked" once it holds the lock. Then each line on stdin is a command: "serve" starts
the Management service on the data directory's socket (as the Mind does once started) and
prints "serving"; end of input releases everything and exits.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tobe.runtime.statelock import StateLock

HOLDER = "tobe mind serve (starting)"


async def main(data_dir: Path) -> None:
    lock = StateLock(data_dir, HOLDER)
    lock.acquire()
    print("locked", flush=True)
    loop = asyncio.get_running_loop()
    endpoint = None
    database = None
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            if line.strip() == "serve":
                # Imported only now: the lock is taken first and fast, as the Mind takes it.
                from mind.management.hosting import serve_management
                from mind.management.service import ManagementService
                from mind.store.database import Database
                from mind.store.migrate import upgrade
                from tobe.config import Settings

                settings = Settings(data_dir=data_dir)
                upgrade(settings.store_url)
                database = Database.open(settings.store_url)
                service = ManagementService(
                    database, database_url=settings.store_url, data_dir=data_dir
                )
                endpoint = await serve_management(service, settings.management_socket)
                print("serving", flush=True)
    finally:
        if endpoint is not None:
            await endpoint.stop(0)
        if database is not None:
            await database.close()
        lock.release()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
