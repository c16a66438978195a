"""`report_progress`: how a running tool tells the Mind how far it got."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from dataclasses import dataclass

_current: contextvars.ContextVar[_Reporter] = contextvars.ContextVar("tobe_hand_progress")


@dataclass(frozen=True)
class _Reporter:
    loop: asyncio.AbstractEventLoop
    send: Callable[[str, float | None], None]


def report_progress(message: str, fraction: float | None = None) -> None:
    """Report progress of the tool call being run (from its coroutine or its worker thread).

    `fraction` is 0..1 when known. Progress is best effort: it is dropped while the Hand is
    reconnecting, and when the function runs outside a Hand (called directly, e.g. in a test).
    """
    if fraction is not None and not 0.0 <= fraction <= 1.0:
        raise ValueError("fraction must be between 0 and 1")
    reporter = _current.get(None)
    if reporter is None:
        return
    try:
        on_loop = asyncio.get_running_loop() is reporter.loop
    except RuntimeError:
        on_loop = False
    if on_loop:
        reporter.send(message, fraction)
    else:
        # From a worker thread: queued before the thread's completion, so it keeps its order.
        reporter.loop.call_soon_threadsafe(reporter.send, message, fraction)


def bind_progress(send: Callable[[str, float | None], None]) -> contextvars.Token[_Reporter]:
    """Route `report_progress` of the current context (one task's coroutine) to `send`."""
    return _current.set(_Reporter(asyncio.get_running_loop(), send))
