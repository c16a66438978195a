"""Plugs the scheduler into a MindApp: built on the app's store and bus with the clock
`[scheduler]` names, started after recovery, stopped before the store closes, and shown the
observations the Awareness router delivers (attach it before `attach_awareness`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mind.scheduler.clock import clock_from
from mind.scheduler.service import Deliver, Scheduler

if TYPE_CHECKING:
    from mind.server import MindApp


def attach_scheduler(app: MindApp, deliver: Deliver) -> Scheduler:
    """`deliver` hands a claimed firing to its conversation (idempotent by its key)."""
    settings = app.settings.scheduler
    scheduler = Scheduler(app.database, clock_from(settings), deliver, settings, app.bus)
    app.scheduler = scheduler
    app.on_start.append(scheduler.start)
    app.on_stop.append(scheduler.stop)
    return scheduler
