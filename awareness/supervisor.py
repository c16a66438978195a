"""Keeps one adapter running: bounded start and stop, its `run` task, restarts with backoff.

An adapter holding a real account loses its connection sooner or later; rather than every
adapter writing its own retry loop (and looking healthy while it retries), an adapter fails
loudly and the supervisor restarts it, so its state in `list_adapters` is always the truth:

    STOPPED ──start──▶ STARTING ──start ok──▶ RUNNING
                           ▲                     │ run raised or returned, context.fail(…)
                           │                     ▼
                           └──after a delay── FAILED (last_error, next_restart_at)

A start that raises or outlasts `start_timeout` is a failure too. After any failure the
adapter's `stop` is called (bounded by `stop_timeout`) so it can release what it had begun,
then the supervisor waits 1 s, doubling to `restart_max_delay` (with jitter), before starting
it again; the delay starts again from 1 s once a start has stayed up for `STABLE_AFTER`. One
adapter's failure, hang or crash never reaches the others: each has its own task, and every
exception of an adapter is caught here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from awareness.model import AdapterState
from awareness.registry import RegisteredAdapter
from awareness.scrub import Scrubber
from tobe.runtime.backoff import Backoff

log = logging.getLogger(__name__)

# Seconds a start must stay up before the restart delay starts again from its first step.
STABLE_AFTER = 60.0
# Seconds a cancelled call of an adapter gets to end before it is abandoned.
_CANCEL_GRACE = 1.0


@dataclass(frozen=True)
class Timeouts:
    start: float
    stop: float
    restart_max_delay: float


class _Failure(Exception):
    """One failure of the adapter, described for people (scrubbed before it is shown)."""


class Supervisor:
    """Runs one registered adapter in a task of its own; see the module docstring."""

    def __init__(self, record: RegisteredAdapter, scrubber: Scrubber, timeouts: Timeouts) -> None:
        self._record = record
        self._scrubber = scrubber
        self._timeouts = timeouts
        self._backoff = Backoff(maximum=timeouts.restart_max_delay)
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._task: asyncio.Task[None] | None = None
        self._reported: asyncio.Future[str] | None = None
        self._first_attempt: asyncio.Future[None] | None = None

    @property
    def active(self) -> bool:
        return self._task is not None

    async def start(self) -> None:
        """Begin supervising; returns once the first start attempt has succeeded or failed."""
        if self._task is not None:
            return
        self._first_attempt = self._loop.create_future()
        self._task = asyncio.create_task(
            self._supervise(), name=f"adapter {self._record.adapter_id}"
        )
        await asyncio.shield(self._first_attempt)

    async def stop(self) -> None:
        """Stop on purpose: no restart; the adapter's `stop` is called when it had started."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self._set(AdapterState.STOPPED)

    def report(self, error: BaseException | str) -> None:
        """`AdapterContext.fail`: callable from the loop or any thread."""
        text = error if isinstance(error, str) else _describe(error)
        if threading.get_ident() == self._loop_thread:
            self._reported_failure(text)
        else:
            self._loop.call_soon_threadsafe(self._reported_failure, text)

    def _reported_failure(self, text: str) -> None:
        if self._reported is not None and not self._reported.done():
            self._reported.set_result(f"reported failure: {text}")
        elif self._record.state is not AdapterState.FAILED:
            log.warning(
                "adapter %s reported a failure while %s (ignored): %s",
                self._record.adapter_id,
                self._record.state.value,
                self._scrubber.scrub(text),
            )

    async def _supervise(self) -> None:
        while True:
            started_at = time.monotonic()
            try:
                reason = await self._attempt()
            except asyncio.CancelledError:  # a stop on purpose
                self._settle_first_attempt()
                await self._stop_instance()
                raise
            await self._stop_instance()
            if time.monotonic() - started_at >= STABLE_AFTER:
                self._backoff.reset()
            delay = self._backoff.next_delay()
            self._fail(reason, delay)
            self._settle_first_attempt()
            await asyncio.sleep(delay)
            self._record.restarts += 1

    async def _attempt(self) -> str:
        """Start the adapter and watch it; returns why it failed (scrubbed)."""
        self._reported = self._loop.create_future()
        self._set(AdapterState.STARTING)
        try:
            await self._bounded(self._record.instance.start(), self._timeouts.start, "start")
            self._set(AdapterState.RUNNING)
            log.info("started adapter %s", self._record.adapter_id)
            self._settle_first_attempt()
            await self._watch()
        except _Failure as failure:
            return self._scrubber.scrub(str(failure))
        raise AssertionError("_watch returns only by raising")

    async def _watch(self) -> None:
        """Wait while the adapter runs; raise _Failure when its run ends or it reports one."""
        assert self._reported is not None
        waits: set[asyncio.Future[Any]] = {self._reported}
        run = getattr(self._record.instance, "run", None)
        run_task: asyncio.Task[None] | None = None
        if callable(run):
            run_task = asyncio.create_task(run(), name=f"adapter {self._record.adapter_id} run")
            waits.add(run_task)
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if run_task is not None and not run_task.done():
                await _cancel(run_task, self._record.adapter_id, "run()", self._timeouts.stop)
        if self._reported.done():
            raise _Failure(self._reported.result())
        assert run_task is not None
        if run_task.cancelled():
            raise _Failure("run() was cancelled")
        error = run_task.exception()
        if error is None:
            raise _Failure("run() returned while the adapter should be running")
        raise _Failure(f"run() failed: {_describe(error)}")

    async def _stop_instance(self) -> None:
        """Call the adapter's `stop` (bounded); a failure of it is logged, never raised."""
        try:
            await self._bounded(self._record.instance.stop(), self._timeouts.stop, "stop")
        except _Failure as failure:
            reason = self._scrubber.scrub(str(failure))
            self._record.last_error = reason
            log.error("adapter %s: %s", self._record.adapter_id, reason)

    async def _bounded(self, call: Coroutine[Any, Any, None], timeout: float, what: str) -> None:
        """Await an adapter's call for at most `timeout` seconds; any failure is a _Failure."""
        task = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout)
        except asyncio.CancelledError:
            await _cancel(task, self._record.adapter_id, what, _CANCEL_GRACE)
            raise
        if not done:
            await _cancel(task, self._record.adapter_id, what, _CANCEL_GRACE)
            raise _Failure(f"{what} timed out after {timeout:g} s")
        error = task.exception()
        if error is not None:
            raise _Failure(f"{what} failed: {_describe(error)}")

    def _fail(self, reason: str, delay: float) -> None:
        self._record.last_error = reason
        self._set(AdapterState.FAILED)
        self._record.next_restart_at = datetime.now(UTC) + timedelta(seconds=delay)
        log.error(
            "adapter %s failed: %s; restarting in %.1f s", self._record.adapter_id, reason, delay
        )

    def _set(self, state: AdapterState) -> None:
        record = self._record
        if record.state is not state:
            record.state, record.state_since = state, datetime.now(UTC)
        if state is not AdapterState.FAILED:
            record.next_restart_at = None

    def _settle_first_attempt(self) -> None:
        if self._first_attempt is not None and not self._first_attempt.done():
            self._first_attempt.set_result(None)


async def _cancel(task: asyncio.Future[Any], adapter_id: str, what: str, grace: float) -> None:
    """Cancel an adapter's call and give it `grace` seconds to end; one that ignores the cancel
    is abandoned (logged), never awaited forever."""
    # What it raises while being cancelled is not the story (the timeout or the stop is), but
    # it must be retrieved, or asyncio logs it as never retrieved.
    task.add_done_callback(lambda done: done.cancelled() or done.exception())
    task.cancel()
    finished, _ = await asyncio.wait({task}, timeout=grace)
    if not finished:
        log.error("adapter %s: %s ignores cancellation; abandoned", adapter_id, what)


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
