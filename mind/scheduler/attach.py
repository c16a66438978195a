"""Plugs the scheduler into a MindApp: built on the app's store, bus and clock, started after
recovery, stopped before the store closes, and shown the observations the Awareness router
delivers (attach it before `attach_awareness`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mind.scheduler.model import Clock
from mind.scheduler.service import Deliver, Scheduler

if TYPE_CHECKING:
    from mind.server import MindApp


def attach_scheduler(app: MindApp, deliver: Deliver, clock: Clock) -> Scheduler:
    """`deliver` hands a claimed firing to its conversation (idempotent by its key); `clock`
    is the one the whole Mind reads time from (`[scheduler] clock_file`)."""
    settings = app.settings.scheduler
    scheduler = Scheduler(app.database, clock, deliver, settings, app.bus)
    app.scheduler = scheduler
    app.on_start.append(scheduler.start)
    app.on_stop.append(scheduler.stop)
    return scheduler
