"""Model-based test of the Broker: random request / decide / expire / restart sequences on a
real SQLite store, checked against a dictionary model after every step."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from approval_calls import CONVERSATION, OWNER, STRANGER, make_call
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mind.approvals.broker import ApprovalBroker
from mind.approvals.errors import ApprovalAlreadyDecided, ApprovalNotFound
from mind.store.database import Database
from mind.store.migrate import upgrade
from mind.store.models import Approval, ApprovalAudit, Conversation, OutboxEvent
from mind.tools.authorizer import Decision

EXPIRY = timedelta(minutes=10)
PERSON_DECISIONS = [Decision.APPROVE_ONCE, Decision.APPROVE_CONVERSATION, Decision.DENY]
_TEMPLATE: dict[str, Path] = {}


def migrated_template() -> Path:
    """One migrated store with the conversation, copied for every example."""
    if "db" not in _TEMPLATE:
        path = Path(tempfile.mkdtemp(prefix="tobe-approvals-model-")) / "template.db"
        upgrade(f"sqlite:///{path}")

        async def seed() -> None:
            database = Database.open(f"sqlite:///{path}")
            try:
                await database.write(
                    lambda tx: tx.session.add(Conversation(key=CONVERSATION, owner=OWNER))
                )
            finally:
                await database.close()

        asyncio.run(seed())
        _TEMPLATE["db"] = path
    return _TEMPLATE["db"]


class BrokerMachine(RuleBasedStateMachine):
    approvals = Bundle("approvals")

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="tobe-approvals-run-"))
        shutil.copy(migrated_template(), self.dir / "tobe.db")
        self.url = f"sqlite:///{self.dir / 'tobe.db'}"
        self.loop = asyncio.new_event_loop()
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.model: dict[str, Decision | None] = {}
        self.requested_at: dict[str, datetime] = {}
        self.calls = 0
        self._open()

    def _open(self) -> None:
        self.database = Database.open(self.url)
        self.broker = ApprovalBroker(
            self.database, expiry=EXPIRY.total_seconds(), clock=lambda: self.now
        )

    def run(self, coroutine):
        return self.loop.run_until_complete(coroutine)

    @rule(target=approvals)
    def request(self) -> str:
        self.calls += 1
        call = make_call(tool_call_id=f"call_{self.calls}")
        record = self.run(self.broker.request(call, arguments_summary="s", reason="r"))
        assert record.pending and record.id not in self.model
        self.model[record.id] = None
        self.requested_at[record.id] = self.now
        return record.id

    @rule(approval=approvals, decision=st.sampled_from(PERSON_DECISIONS))
    def decide(self, approval: str, decision: Decision) -> None:
        if self.model[approval] is None:
            record = self.run(self.broker.decide(approval, decision, principal=OWNER))
            assert record.decision is decision
            self.model[approval] = decision
        else:
            with pytest.raises(ApprovalAlreadyDecided):
                self.run(self.broker.decide(approval, decision, principal=OWNER))

    @rule(approval=approvals)
    def stranger_decides(self, approval: str) -> None:
        with pytest.raises(ApprovalNotFound):
            self.run(self.broker.decide(approval, Decision.APPROVE_ONCE, principal=STRANGER))

    @rule(minutes=st.integers(min_value=1, max_value=15))
    def time_passes_and_expiry_runs(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)
        expired = {r.id for r in self.run(self.broker.expire_due())}
        due = {
            approval
            for approval, decision in self.model.items()
            if decision is None and self.requested_at[approval] + EXPIRY <= self.now
        }
        assert expired == due
        for approval in due:
            self.model[approval] = Decision.EXPIRED

    @rule()
    def restart(self) -> None:
        self.run(self.database.close())
        self._open()

    @invariant()
    def store_matches_model(self) -> None:
        def read(session: Session) -> tuple[dict[str, str | None], int, int]:
            rows = {a.id: a.decision for a in session.scalars(select(Approval))}
            audits = session.scalar(select(func.count()).select_from(ApprovalAudit))
            events = session.scalar(select(func.count()).select_from(OutboxEvent))
            return rows, audits or 0, events or 0

        rows, audits, events = self.run(self.database.read(read))
        expected = {k: (v.value if v else None) for k, v in self.model.items()}
        assert rows == expected
        decided = sum(1 for v in self.model.values() if v is not None)
        # One audit row per decision; one event per request and one per decision.
        assert audits == decided
        assert events == len(self.model) + decided
        pending = {r.id for r in self.run(self.broker.pending())}
        assert pending == {k for k, v in self.model.items() if v is None}

    def teardown(self) -> None:
        self.run(self.database.close())
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)


BrokerMachine.TestCase.settings = settings(max_examples=10, stateful_step_count=15, deadline=None)
test_broker_follows_its_model = BrokerMachine.TestCase
