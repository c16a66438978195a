"""A server that is ready has moved its startup heap out of the collector's generations."""

from __future__ import annotations

import asyncio
import gc
import os
import signal

from tobe.runtime.server import run_until_signal


async def test_a_server_freezes_its_startup_heap_once_ready_and_stops_at_sigterm() -> None:
    gc.unfreeze()
    frozen_at_ready: list[int] = []
    stopped = asyncio.Event()

    async def stop() -> None:
        stopped.set()

    try:
        serving = asyncio.create_task(
            run_until_signal(stop, ready=lambda: frozen_at_ready.append(gc.get_freeze_count()))
        )
        await asyncio.sleep(0)  # the task runs up to its wait for a signal
        assert frozen_at_ready == [0]
        assert gc.get_freeze_count() > 0
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(serving, 10)
        assert stopped.is_set()
    finally:
        gc.unfreeze()
