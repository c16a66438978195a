"""A server that is ready has moved its startup heap out of the collector's generations and
collects its young generation less often."""

from __future__ import annotations

import asyncio
import gc
import os
import signal

from tobe.runtime.heap import YOUNG_THRESHOLD
from tobe.runtime.server import run_until_signal


async def test_a_ready_server_freezes_its_startup_heap_and_collects_less_often() -> None:
    gc.unfreeze()
    thresholds = gc.get_threshold()
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
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *thresholds[1:])
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(serving, 10)
        assert stopped.is_set()
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
