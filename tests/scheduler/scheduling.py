"""Shared by the scheduler's tests: the conversations the `conversations` fixture makes and a
helper that schedules an action in one of them."""

from __future__ import annotations

from datetime import UTC, datetime

from mind.events.action_views import PlanStepView, ScheduledActionView, TriggerView
from mind.scheduler.records import create_schedule
from mind.store.database import Database

KEY = "g_team"
CAROLS = "p_carol"
START = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
PLAN = (PlanStepView(1, "send_message", "remind the team"),)


async def schedule(
    database: Database,
    trigger: TriggerView,
    *,
    now: datetime = START,
    key: str = KEY,
    owner: str = "alice",
    catch_up: bool | None = None,
) -> ScheduledActionView:
    audience = [owner, "bob"] if key == KEY else [owner]
    return await database.write(
        lambda tx: create_schedule(
            tx,
            conversation_key=key,
            owner=owner,
            audience=audience,
            title="stand-up reminder",
            goal="remind the team of the stand-up",
            plan=PLAN,
            trigger=trigger,
            source="test",
            now=now,
            catch_up=catch_up,
        )
    )
