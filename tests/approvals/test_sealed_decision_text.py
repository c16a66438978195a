"""A sealed run's approval request: its decision text and arguments are stored sealed, read
back while the run's key exists, and read as removed once it is gone (both backends)."""

from __future__ import annotations

import json

from approval_calls import make_call
from sqlalchemy import select
from sqlalchemy.orm import Session

from mind.api.events import durable_event
from mind.approvals.broker import ApprovalBroker
from mind.sealing.cipher import new_key
from mind.sealing.keyring import REMOVED, KeyRing, Queried
from mind.store.database import Database
from mind.store.models import Approval, OutboxEvent
from mind.tools.base import DetailMode

VALUE = "HEART-VALUE-5521"


async def test_a_sealed_runs_decision_text_reads_as_removed_once_its_key_is_gone(
    database: Database, conversation: str
) -> None:
    ring = KeyRing()
    ring.add("run_1", new_key())
    broker = ApprovalBroker(database, expiry=600, keyring=ring)
    call = make_call(
        arguments={"day": VALUE},
        decision_text=f"read heart rate of {VALUE}",
        detail_mode=DetailMode.TRANSPARENT,
    )
    record = await broker.request(call, arguments_summary="day=<16 chars>", reason="asks")
    assert record.decision_text == f"read heart rate of {VALUE}"

    def stored(session: Session) -> str:
        approvals = [row.decision_text for row in session.scalars(select(Approval))]
        events = [row.payload for row in session.scalars(select(OutboxEvent))]
        return json.dumps([approvals, events])

    assert VALUE not in await database.read(stored)
    events = await database.read(lambda s: list(s.scalars(select(OutboxEvent))))
    opened = durable_event(events[-1], ring).approval_changed
    assert VALUE in opened.decision_text and VALUE in opened.arguments_json

    ring.shred("run_1", [Queried("health.heart", "succeeded")])
    again = await broker.get(record.id)
    assert again is not None and again.decision_text == REMOVED
    gone = durable_event(events[-1], ring).approval_changed
    assert gone.decision_text == REMOVED and gone.arguments_json == ""
