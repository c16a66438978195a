"""The Approval Broker: one per Mind process, the only writer of approval decisions.

1. `request` commits the approval row and its durable `approval_changed` outbox event in one
   transaction (idempotent per tool call: asking again after a restart returns the stored
   request).
2. `wait` blocks the tool call until a decision is committed.
3. `decide` commits the first decision with a compare-and-set (`UPDATE … WHERE decision IS
   NULL`; the store's trigger refuses a second decision as a last line of defence), together
   with the conversation grant (approve for this conversation), the audit row and the outbox
   event. Only after the commit are waiters woken and listeners told. A later decision raises
   `ApprovalAlreadyDecided`.
4. A background task expires requests at `expires_at` as `expired` (= denied), whether or not
   any client is connected. Pending requests survive a restart: `start` schedules them again.

Decisions for requests nobody in this process waits for (the run was interrupted by a restart)
are passed to the `on_unattended` callback, so the conversation can continue the run.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, func, select, update
from sqlalchemy.orm import Session

from mind.approvals.audit import AuditSource, add_audit
from mind.approvals.errors import ApprovalAlreadyDecided, ApprovalNotFound, InvalidDecision
from mind.approvals.model import ApprovalRecord
from mind.conversation import delegations
from mind.events.payloads import approval_view
from mind.sealing.cipher import seal_text, text_envelope
from mind.sealing.forms import Sealer, open_text
from mind.sealing.keyring import REMOVED, KeyRing
from mind.store.database import Database
from mind.store.insert_once import conflict_insert
from mind.store.models import (
    Approval,
    ApprovalGrant,
    Conversation,
    ConversationMember,
    utcnow,
)
from mind.store.write_tx import Unit, WriteTx
from mind.tools.authorizer import CallUnderReview, Decision
from mind.tools.base import DetailMode, Effect
from tobe.runtime.digest import arguments_digest, canonical_json
from tobe.telemetry import instruments

log = logging.getLogger(__name__)

EVENT_TYPE = "approval_changed"
MAX_REASON = 2000
DecisionListener = Callable[[ApprovalRecord], Awaitable[None]]


def to_record(row: Approval, keyring: KeyRing | None = None) -> ApprovalRecord:
    """The record of `row`; a sealed run's decision text opens with `keyring` while its key
    exists (without a ring, or once the key is gone, it reads as removed)."""
    return ApprovalRecord(
        id=row.id,
        conversation_key=row.conversation_key,
        run_id=row.run_id,
        tool_call_id=row.tool_call_id,
        tool=row.tool,
        effect=Effect(row.effect),
        hand_id=row.hand_id,
        arguments_summary=row.arguments_summary,
        arguments_digest=row.arguments_digest,
        reason=row.reason,
        requested_at=row.requested_at,
        expires_at=row.expires_at,
        decision_text=open_text(row.decision_text, keyring or KeyRing()),
        origin=row.origin,
        decision=Decision(row.decision) if row.decision else None,
        decided_by=row.decided_by or "",
        decision_reason=row.decision_reason,
        decided_at=row.decided_at,
    )


def audience(session: Session, conversation_key: str) -> list[str]:
    """Principals who may see the conversation: its owner and members."""
    owner = session.scalar(select(Conversation.owner).where(Conversation.key == conversation_key))
    members = session.scalars(
        select(ConversationMember.principal).where(
            ConversationMember.conversation_key == conversation_key
        )
    )
    return ([owner] if owner else []) + sorted(members)


def _insert_grant(session: Session, values: dict[str, object]):  # type: ignore[no-untyped-def]
    insert = conflict_insert(session.get_bind().dialect.name, ApprovalGrant)
    return insert.values(**values).on_conflict_do_nothing()


class ApprovalBroker:
    """See the module docstring. Call `start` once before use and `aclose` at shutdown."""

    def __init__(
        self,
        database: Database,
        *,
        expiry: float,
        clock: Callable[[], datetime] = utcnow,
        keyring: KeyRing | None = None,
    ) -> None:
        self._database = database
        # A sealed run's decision texts are stored sealed (`mind.sealing`).
        self._keyring = keyring or KeyRing()
        self._expiry = timedelta(seconds=expiry)
        self._clock = clock
        self._waiters: dict[str, list[asyncio.Future[ApprovalRecord]]] = {}
        self._listeners: list[DecisionListener] = []
        self._unattended: DecisionListener | None = None
        self._changed = asyncio.Event()
        self._expirer: asyncio.Task[None] | None = None
        self._stopping = False

    def add_listener(self, listener: DecisionListener) -> None:
        """Called after every committed decision (e.g. to update the Actor's grant cache)."""
        self._listeners.append(listener)

    def on_unattended(self, callback: DecisionListener) -> None:
        """Called after a decision that no execution in this process was waiting for."""
        self._unattended = callback

    async def start(self) -> None:
        if self._expirer is None:
            self._stopping = False
            self._expirer = asyncio.create_task(self._expire_forever(), name="approval-expiry")

    async def aclose(self) -> None:
        """Stop the expiry task between two store operations (never cancel one midway)."""
        if self._expirer is not None:
            self._stopping = True
            self._changed.set()
            await asyncio.gather(self._expirer, return_exceptions=True)
            self._expirer = None

    # -- requests -----------------------------------------------------------------------------

    async def request(
        self, call: CallUnderReview, *, arguments_summary: str, reason: str
    ) -> ApprovalRecord:
        """Persist a request for `call` (or return the one already stored for its tool call).

        `arguments_summary` must be secret-free: it is shown, audited and sent as an event.
        `call.decision_text` is stored and sent with the request, never audited; so is
        `call.run_origin` (what started the run: trust and source names, never content).
        """
        transparent = call.detail_mode == DetailMode.TRANSPARENT
        arguments = canonical_json(call.arguments) if transparent else ""

        def unit(tx: WriteTx) -> ApprovalRecord:
            session = tx.session
            existing = session.scalar(
                select(Approval).where(Approval.tool_call_id == call.tool_call_id)
            )
            if existing is not None:
                return self._record(existing)
            now = self._clock()
            key = self._keyring.held(call.run_id)
            text = call.decision_text
            stored = seal_text(text, call.run_id, key) if key is not None and text else text
            row = Approval(
                id=f"ap_{uuid.uuid4().hex}",
                conversation_key=call.conversation_key,
                run_id=call.run_id,
                tool_call_id=call.tool_call_id,
                tool=call.tool,
                effect=call.effect.value,
                hand_id=call.hand_id,
                arguments_summary=arguments_summary,
                arguments_digest=arguments_digest(call.arguments),
                reason=reason,
                decision_text=stored,
                origin=call.run_origin,
                requested_at=now,
                expires_at=now + self._expiry,
            )
            session.add(row)
            session.flush()
            record = self._record(row)
            watched, delegate_call = delegations.shown_in(session, call.conversation_key)
            tx.event(
                type=EVENT_TYPE,
                conversation_key=watched,
                audience=audience(session, call.conversation_key),
                payload=self._payload(record, row.decision_text, arguments, delegate_call),
            )
            return record

        return await self._write(unit, self._wake_expiry)

    def _record(self, row: Approval) -> ApprovalRecord:
        return to_record(row, self._keyring)

    def _payload(
        self, record: ApprovalRecord, stored: str, arguments: str = "", delegate_call: str = ""
    ) -> dict[str, Any]:
        """The event of `record`; a sealed run's (its decision text `stored` sealed) carries
        the text and `arguments` sealed under the run's key. `delegate_call`: the parent's
        call whose child asks (`mind.conversation.delegations.shown_in`)."""
        key = self._keyring.held(record.run_id) if text_envelope(stored) else None
        if key is None:
            shown = "" if text_envelope(stored) else arguments
            return approval_view(record, shown, delegate_call).to_payload()
        redacted = approval_view(replace(record, decision_text=REMOVED), "", delegate_call)
        plain = approval_view(record, arguments, delegate_call).to_payload()
        return Sealer(record.run_id, key, {}).event(redacted.to_payload(), plain)

    async def get(self, approval_id: str) -> ApprovalRecord | None:
        def query(session: Session) -> ApprovalRecord | None:
            row = session.get(Approval, approval_id)
            return self._record(row) if row is not None else None

        return await self._database.read(query)

    async def for_tool_call(self, tool_call_id: str) -> ApprovalRecord | None:
        """The request stored for a tool call, if one was ever made."""

        def query(session: Session) -> ApprovalRecord | None:
            row = session.scalar(select(Approval).where(Approval.tool_call_id == tool_call_id))
            return self._record(row) if row is not None else None

        return await self._database.read(query)

    async def pending(self, conversation_key: str | None = None) -> list[ApprovalRecord]:
        """Undecided requests, oldest first (all conversations when no key is given)."""
        query = select(Approval).where(Approval.decision.is_(None))
        if conversation_key is not None:
            query = query.where(Approval.conversation_key == conversation_key)
        query = query.order_by(Approval.requested_at, Approval.id)
        return await self._database.read(
            lambda session: [self._record(row) for row in session.scalars(query)]
        )

    async def wait(self, approval_id: str) -> ApprovalRecord:
        """The committed decision of `approval_id`, waiting for it if needed."""
        future: asyncio.Future[ApprovalRecord] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(approval_id, []).append(future)
        try:
            record = await self.get(approval_id)
            if record is None:
                raise ApprovalNotFound(approval_id)
            if not record.pending:
                return record
            instruments.approvals_waiting.add(1)
            try:
                return await future
            finally:
                instruments.approvals_waiting.add(-1)
        finally:
            waiters = self._waiters.get(approval_id, [])
            if future in waiters:
                waiters.remove(future)
            if not waiters:
                self._waiters.pop(approval_id, None)

    # -- decisions ----------------------------------------------------------------------------

    async def decide(
        self,
        approval_id: str,
        decision: Decision,
        *,
        principal: str,
        reason: str = "",
        sees_all: bool = False,
    ) -> ApprovalRecord:
        """A person's decision. Raises NotFound (also when `principal` cannot see the
        conversation, unless `sees_all`: scope admin), AlreadyDecided, or InvalidDecision."""
        if decision == Decision.EXPIRED:
            raise InvalidDecision("`expired` is set by the broker, not given by a person")
        if len(reason) > MAX_REASON:
            raise InvalidDecision(
                f"reason is {len(reason)} characters; the maximum is {MAX_REASON}"
            )
        return await self._commit(
            approval_id,
            decision,
            AuditSource.USER,
            principal=principal,
            reason=reason,
            check_access=not sees_all,
        )

    async def close_for_ended_run(self, approval_id: str, reason: str) -> ApprovalRecord | None:
        """Deny a request whose run ended while waiting (e.g. cancelled); None if decided."""
        try:
            return await self._commit(
                approval_id,
                Decision.DENY,
                AuditSource.RUN,
                principal="",
                reason=reason,
                check_access=False,
            )
        except ApprovalAlreadyDecided:
            return None

    async def _commit(
        self,
        approval_id: str,
        decision: Decision,
        source: AuditSource,
        *,
        principal: str,
        reason: str,
        check_access: bool,
    ) -> ApprovalRecord:
        def unit(tx: WriteTx) -> ApprovalRecord:
            session = tx.session
            row = session.get(Approval, approval_id)
            if row is None:
                raise ApprovalNotFound(approval_id)
            if check_access and principal not in audience(session, row.conversation_key):
                raise ApprovalNotFound(approval_id)
            if row.decision is not None:
                raise ApprovalAlreadyDecided(approval_id, row.decision)
            now = self._clock()
            result = session.execute(
                update(Approval)
                .where(Approval.id == approval_id, Approval.decision.is_(None))
                .values(
                    decision=decision.value,
                    decided_by=principal,
                    decision_reason=reason,
                    decided_at=now,
                )
                .execution_options(synchronize_session=False)
            )
            # An UPDATE's result is a cursor's.
            if cast(CursorResult[Any], result).rowcount != 1:
                current = session.scalar(
                    select(Approval.decision).where(Approval.id == approval_id)
                )
                raise ApprovalAlreadyDecided(approval_id, current or "unknown")
            session.refresh(row)
            record = self._record(row)
            if decision == Decision.APPROVE_CONVERSATION:
                session.execute(
                    _insert_grant(
                        session,
                        {
                            "conversation_key": record.conversation_key,
                            "tool": record.tool,
                            "hand_id": record.hand_id,
                            "approval_id": record.id,
                            "created_at": now,
                        },
                    )
                )
            add_audit(
                tx,
                approval_id=record.id,
                conversation_key=record.conversation_key,
                tool_call_id=record.tool_call_id,
                tool=record.tool,
                source=source,
                verdict=decision.value,
                principal=principal,
                summary=_decision_summary(record),
            )
            watched, delegate_call = delegations.shown_in(session, record.conversation_key)
            tx.event(
                type=EVENT_TYPE,
                conversation_key=watched,
                audience=audience(session, record.conversation_key),
                payload=self._payload(record, row.decision_text, "", delegate_call),
            )
            return record

        return await self._write(unit, self._settle)

    async def _write(
        self, unit: Unit[ApprovalRecord], settle: Callable[[ApprovalRecord], Awaitable[None]]
    ) -> ApprovalRecord:
        """Commit `unit`, then `settle` its record in memory.

        The store commits a unit even when its caller is cancelled meanwhile, so the two run
        as one shielded task: a committed change is always settled (waiters woken, listeners
        and the expiry task told), whether or not its caller is still there.
        """

        async def commit_and_settle() -> ApprovalRecord:
            record = await self._database.write(unit)
            await settle(record)
            return record

        return await asyncio.shield(commit_and_settle())

    async def _wake_expiry(self, _record: ApprovalRecord) -> None:
        """After a request: the expiry task reschedules for it."""
        self._changed.set()

    async def _settle(self, record: ApprovalRecord) -> None:
        """Wake the waiting execution and tell listeners; runs only after the commit.

        Listeners run inline (the decider's call waits for them): they must be quick.
        """
        self._changed.set()
        waiters = self._waiters.pop(record.id, [])
        for future in waiters:
            if not future.done():
                future.set_result(record)
        for listener in self._listeners:
            await _safely(listener, record)
        if not waiters and self._unattended is not None:
            await _safely(self._unattended, record)

    # -- expiry -------------------------------------------------------------------------------

    async def expire_due(self) -> list[ApprovalRecord]:
        """Expire every pending request whose time is up; returns the ones this call expired."""
        query = select(Approval.id).where(
            Approval.decision.is_(None), Approval.expires_at <= self._clock()
        )
        due = await self._database.read(lambda session: list(session.scalars(query)))
        expired = []
        for approval_id in due:
            try:
                expired.append(
                    await self._commit(
                        approval_id,
                        Decision.EXPIRED,
                        AuditSource.EXPIRY,
                        principal="",
                        reason="no decision before the request expired",
                        check_access=False,
                    )
                )
            except ApprovalAlreadyDecided:
                continue
        return expired

    async def _next_expiry(self) -> datetime | None:
        query = select(func.min(Approval.expires_at)).where(Approval.decision.is_(None))
        return await self._database.read(lambda session: session.scalar(query))

    async def _expire_forever(self) -> None:
        while not self._stopping:
            self._changed.clear()
            try:
                await self.expire_due()
                next_at = await self._next_expiry()
            except Exception:
                log.exception("approval expiry failed; retrying")
                next_at = self._clock() + timedelta(seconds=1)
            delay = None
            if next_at is not None:
                delay = max(0.0, (next_at - self._clock()).total_seconds()) + 0.01
            try:
                await asyncio.wait_for(self._changed.wait(), delay)
            except TimeoutError:
                pass


def _decision_summary(record: ApprovalRecord) -> str:
    text = f"{record.tool} ({record.effect.value}) on {record.hand_id or 'mind'}: "
    text += record.arguments_summary
    if record.decision_reason:
        text += f" — {record.decision_reason}"
    return text


async def _safely(listener: DecisionListener, record: ApprovalRecord) -> None:
    try:
        await listener(record)
    except Exception:
        log.exception("approval listener failed for %s", record.id)
