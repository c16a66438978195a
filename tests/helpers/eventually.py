"""Waiting for a condition that other threads, tasks or processes make true.

For state that announces no change (a row in another process's store, a log line, a file),
the condition is checked again and again until it holds or the time is up. A timeout fails
the test with what was awaited and the value last observed, never with a bare "timed out".

    eventually(lambda: face.log_lines("resync"), what="the resync log line")
    await eventually_async(lambda: stored_keys(database), until=lambda keys: keys == ["p_a"],
                           what="p_a stored")

`condition` returns the observed value; by default the wait ends when it is truthy, or when
`until(value)` holds if given. The observed value that ended the wait is returned.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

TIMEOUT = 30.0
INTERVAL = 0.05
_NOTHING_OBSERVED = "nothing (the condition never returned)"


def eventually(
    condition: Callable[[], T],
    timeout: float = TIMEOUT,
    *,
    what: str,
    until: Callable[[T], object] = bool,
    context: Callable[[], str] | None = None,
    interval: float = INTERVAL,
) -> T:
    """Check `condition` every `interval` seconds until it holds; AssertionError after `timeout`.

    `context` adds what helps explain a failure (a process's log) to the message.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if until(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_failure(what, timeout, repr(value), context))
        time.sleep(interval)


async def eventually_async(
    condition: Callable[[], T | Awaitable[T]],
    timeout: float = TIMEOUT,
    *,
    what: str,
    until: Callable[[T], object] = bool,
    context: Callable[[], str] | None = None,
    interval: float = INTERVAL,
) -> T:
    """`eventually` without blocking the event loop; `condition` may be a coroutine function.

    The timeout also bounds a check that hangs.
    """
    observed = _NOTHING_OBSERVED
    try:
        async with asyncio.timeout(timeout):
            while True:
                value = condition()
                if inspect.isawaitable(value):
                    value = await value
                observed = repr(value)
                if until(value):  # type: ignore[arg-type]
                    return value  # type: ignore[return-value]
                await asyncio.sleep(interval)
    except TimeoutError:
        raise AssertionError(_failure(what, timeout, observed, context)) from None


def _failure(what: str, timeout: float, observed: str, context: Callable[[], str] | None) -> str:
    if len(observed) > 2000:
        observed = f"{observed[:1000]} … {observed[-1000:]}"
    message = f"timed out after {timeout:g}s waiting for {what}; last observed: {observed}"
    return message if context is None else f"{message}\n{context()}"
