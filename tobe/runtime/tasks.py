"""Stopping helper tasks without losing a cancellation of the task that stops them.

`task.cancel()` then `await task` under `suppress(CancelledError)` cannot tell the helper's
own cancellation from one aimed at the awaiting task: a SIGTERM that cancels a service while it
cleans up after a stream would be swallowed, and the service would carry on (a Hand whose Mind
ended the stream as both were told to stop kept reconnecting instead of stopping).
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Task[Any]) -> None:
    """Cancel `tasks` and wait until each has ended.

    A cancellation of the caller while it waits propagates. An error a task ended with
    (other than its cancellation) is raised, as awaiting it would.
    """
    for task in tasks:
        task.cancel()
    if not tasks:
        return
    await asyncio.wait(tasks)
    for task in tasks:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
