"""Publishing by trust: HIGH/MAX at once, LOW and MEDIUM aggregated per adapter, OFF never.

Runs on the event loop only. A publish commits to the journal first and then wakes the
subscribers, which read from the journal; so a live subscriber and one resuming after a
restart see the same sequence. A LOW/MEDIUM observation is committed to the journal as held
when accepted (so before its adapter acknowledges it to anyone); the window's timer then
publishes what is held for that (adapter, trust), and what a crash left held is published by
`publish_left_over` at the next start. Closing the push ends every subscription and refuses
new ones, while later publishes (flushes during shutdown) are still committed for the next run.

Each published batch keeps, in memory only, the trace context of the emission that published
it (an aggregated batch its first held observation's) for the subscribers to pass on
(`trace_of`); the newest `TRACES_KEPT` are kept, and a batch replayed after a restart has none.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from awareness.errors import CursorAhead, PushClosed
from awareness.journal import Journal
from awareness.model import Observation, PublishedBatch, Trust

log = logging.getLogger(__name__)

TRACES_KEPT = 1024


class Publisher:
    def __init__(self, journal: Journal, *, low_window: float, medium_window: float) -> None:
        self.journal = journal
        self._windows = {Trust.LOW: low_window, Trust.MEDIUM: medium_window}
        self._timers: dict[tuple[str, Trust], asyncio.TimerHandle] = {}
        self._published = asyncio.Event()
        self._closed = False
        self._traces: dict[int, dict[str, str]] = {}
        self._held_traces: dict[tuple[str, Trust], dict[str, str]] = {}

    def accept(self, observation: Observation, trace: dict[str, str] | None = None) -> None:
        """Publish now, hold for the window, or drop, by trust; committed when this returns.
        `trace` is the emission's trace context (`tobe.telemetry.carrier`)."""
        if observation.trust is Trust.OFF:
            log.debug("dropped an off-trust observation from %s", observation.adapter_name)
            return
        if observation.trust in (Trust.HIGH, Trust.MAX):
            self._announce(self.journal.append([observation]), trace)
            return
        self.journal.hold(observation)
        key = (observation.adapter_id, observation.trust)
        if trace:
            self._held_traces.setdefault(key, trace)
        if key not in self._timers:
            loop = asyncio.get_running_loop()
            self._timers[key] = loop.call_later(self._windows[observation.trust], self._flush, key)

    def flush_adapter(self, adapter_id: str) -> None:
        """Publish an adapter's held observations now (unregister and shutdown)."""
        for key in [k for k in self.journal.held_keys() if k[0] == adapter_id]:
            self._flush(key)

    def publish_left_over(self) -> None:
        """Publish what a previous run held but never published (it crashed in the window)."""
        for key in self.journal.held_keys():
            self._flush(key)

    def _flush(self, key: tuple[str, Trust]) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        batch = self.journal.publish_held(*key)
        trace = self._held_traces.pop(key, None)
        if batch is not None:
            self._announce(batch, trace)

    def trace_of(self, publish_seq: int) -> dict[str, str]:
        """The trace context a batch was published in; empty when unknown or tracing is off."""
        return self._traces.get(publish_seq, {})

    def _announce(self, batch: PublishedBatch, trace: dict[str, str] | None = None) -> None:
        if trace:
            self._traces[batch.publish_seq] = trace
            if len(self._traces) > TRACES_KEPT:
                del self._traces[next(iter(self._traces))]
        observations = batch.observations
        log.info(
            "published seq %d: %d %s observation(s) from %s",
            batch.publish_seq,
            len(observations),
            observations[0].trust.value,
            observations[0].adapter_name,
        )
        self._wake()

    def _wake(self) -> None:
        self._published.set()
        self._published = asyncio.Event()

    def close(self) -> None:
        """End every subscription and refuse new ones."""
        self._closed = True
        self._wake()

    async def subscribe(self, after_seq: int) -> AsyncIterator[PublishedBatch]:
        """Batches with publish_seq > after_seq, then live ones, until the push closes."""
        if self._closed:
            raise PushClosed("Awareness is shutting down; subscribe again after it restarts")
        head = self.journal.head()
        if after_seq > head:
            raise CursorAhead(
                f"after_seq {after_seq} is beyond the newest publish_seq {head}: this journal "
                "was reset; resubscribe from 0 and deduplicate by observation id"
            )
        cursor = after_seq
        while not self._closed:
            wake = self._published
            batches = self.journal.after(cursor)
            for batch in batches:
                if self._closed:
                    return
                yield batch
                cursor = batch.publish_seq
                self.journal.mark_read(cursor)
            if not batches:
                await wake.wait()
