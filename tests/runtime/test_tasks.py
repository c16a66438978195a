"""Stopping helper tasks keeps a cancellation aimed at the task that stops them."""

from __future__ import annotations

import asyncio

import pytest

from tobe.runtime.tasks import cancel_and_wait


async def _slow_to_stop(release: asyncio.Event) -> None:
    """A helper that needs a moment to clean up once cancelled (like a stream's writer)."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        await release.wait()
        raise


async def test_a_cancel_of_the_caller_while_it_waits_for_its_helpers_still_cancels_it() -> None:
    release = asyncio.Event()
    helper = asyncio.create_task(_slow_to_stop(release))
    await asyncio.sleep(0)
    stopping = asyncio.create_task(cancel_and_wait(helper))
    await asyncio.sleep(0)

    stopping.cancel()  # e.g. SIGTERM while the service cleans up after a stream
    release.set()

    with pytest.raises(asyncio.CancelledError):
        await stopping
    await asyncio.wait({helper})
    assert helper.cancelled()


async def test_helpers_are_cancelled_and_awaited_and_their_cancellation_is_not_an_error() -> None:
    helpers = [asyncio.create_task(asyncio.Event().wait()) for _ in range(3)]
    await asyncio.sleep(0)

    await cancel_and_wait(*helpers)

    assert all(helper.cancelled() for helper in helpers)


async def test_an_error_a_helper_ended_with_is_raised_as_awaiting_it_would() -> None:
    async def broken() -> None:
        raise RuntimeError("the writer failed")

    helper = asyncio.create_task(broken())
    await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="the writer failed"):
        await cancel_and_wait(helper)
