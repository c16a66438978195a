"""The actions API group: a conversation's pending and scheduled actions, and the owner's
decisions on them.

Members see a conversation's actions; only its owner decides a pending action or changes a
scheduled one. A decision carried out by a run enters the conversation's queue as the
owner's input (`mind.agent.action_decisions`); the others commit at once.
"""

from __future__ import annotations

import builtins

from sqlalchemy.orm import Session

from mind.actions import records as action_records
from mind.actions.model import PendingChoice
from mind.agent import action_decisions
from mind.agent.action_decisions import DecideResult, Route
from mind.agent.actor_state import ChatInput
from mind.agent.actors import ConversationActors
from mind.conversation import inputs, queries
from mind.conversation.access import Viewer, can_see, check_principal
from mind.conversation.limits import check_idempotency_key
from mind.errors import InvalidInput, NotAllowed, NotFound, WrongState
from mind.events.action_views import PendingActionView, PendingState, ScheduledActionView
from mind.scheduler import records as schedules
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode


def _action_access(session: Session, action_id: str) -> tuple[PendingActionView, str, list[str]]:
    """A pending action with its conversation's owner and members; NotFound when unknown."""
    action = action_records.view_of(action_records.find(session, action_id))
    owner, members = queries.access(session, action.conversation_key)
    return action, owner, members


class Actions:
    def __init__(self, actors: ConversationActors) -> None:
        self._actors = actors
        self._database = actors.database

    async def list(
        self, viewer: Viewer, key: str, include_ended: bool
    ) -> tuple[builtins.list[PendingActionView], builtins.list[ScheduledActionView]]:
        """A conversation's actions waiting for confirmation and its scheduled actions, oldest
        first (every one with `include_ended`), for its owner and members (NotFound for anyone
        else)."""
        check_principal(viewer.principal)
        now = self._actors.clock.now()

        def read(
            session: Session,
        ) -> tuple[builtins.list[PendingActionView], builtins.list[ScheduledActionView]]:
            queries.visible(session, viewer, key)
            scheduled = schedules.list_schedules(session, key, include_ended)
            if include_ended:
                return action_records.listing(session, key, pending_only=False), scheduled
            return action_records.waiting(session, key, now), scheduled

        return await self._database.read(read)

    async def change_schedule(
        self, viewer: Viewer, schedule_id: str, change: schedules.Change
    ) -> ScheduledActionView:
        """Pause, resume or delete a scheduled action as its owner. Members see it but may
        not change it (NotAllowed); anyone else is told it does not exist."""
        check_principal(viewer.principal)

        def read(session: Session) -> str:
            owner, view = schedules.get_schedule(session, schedule_id)
            try:
                queries.visible(session, viewer, view.conversation_key)
            except NotFound as exc:
                raise NotFound(f"no scheduled action {schedule_id!r}") from exc
            return owner

        if viewer.principal != await self._database.read(read):
            raise NotAllowed(f"only the owner of scheduled action {schedule_id} may change it")
        now = self._actors.clock.now()
        return await self._database.write(
            lambda tx: schedules.change_schedule(tx, schedule_id, change, now)
        )

    async def decide(
        self,
        viewer: Viewer,
        action_id: str,
        choice: PendingChoice,
        amendment: str,
        idempotency_key: str,
    ) -> DecideResult:
        """The owner confirms, cancels or amends a pending action (see
        `mind.agent.action_decisions`). NotAllowed for members, NotFound for an unknown or
        foreign action, WrongState when it was decided or expired."""
        check_principal(viewer.principal)
        check_idempotency_key(idempotency_key, "decision")
        amendment = amendment.strip()
        if (choice is PendingChoice.AMEND) != bool(amendment):
            raise InvalidInput("an amendment (and only an amendment) needs `amendment`: the change")
        layer = self._actors.decisions
        if layer is None:
            raise WrongState("the decision layer is not running in this Mind")
        action, owner, members = await self._database.read(lambda s: _action_access(s, action_id))
        if not can_see(viewer, owner, members):
            raise NotFound(f"no pending action {action_id!r}")
        if viewer.principal != owner:
            raise NotAllowed(f"only the owner of {action.conversation_key} decides its actions")
        key = action.conversation_key
        earlier = await self._database.first(
            inputs.BY_IDEMPOTENCY_KEY, key=key, idempotency_key=idempotency_key
        )
        if earlier is not None:
            return await self._decided(action_decisions.decided_by(earlier), earlier.run_id or "")
        now = layer.clock.now()
        if await self._database.write(lambda tx: action_records.expire_if_due(tx, action_id, now)):
            raise WrongState(f"action {action_id} expired at {action.expires_at.isoformat()}")
        if action.state is not PendingState.PENDING:
            raise WrongState(f"action {action_id} was already {action.state.value}")
        if action_decisions.route(action, choice) is Route.RUN:
            chat = ChatInput(
                owner,
                action_decisions.text(action, choice, amendment),
                idempotency_key,
                False,
                DetailMode.SUMMARY.value,
                action_decisions.source(action_id, choice, amendment),
                also=action_decisions.in_run_unit(layer, action_id, choice),
            )
            async with self._actors.holding(key) as actor:
                sent = await actor.submit(chat)
            return await self._decided(action_id, sent.run_id)
        audience = [owner, *members]

        def unit(tx: WriteTx) -> DecideResult | None:
            if inputs.find(tx, key, idempotency_key) is not None:
                return None  # a concurrent retry took it first
            scheduled = action_decisions.at_once(tx, layer, action, choice, audience)
            action_decisions.record_input(tx, key, owner, idempotency_key, action, choice)
            view = action_records.view_of(action_records.find(tx.session, action_id))
            return DecideResult(view, "", scheduled)

        decided = await self._database.write(unit)
        return decided if decided is not None else await self._decided(action_id, "")

    async def _decided(self, action_id: str, run_id: str) -> DecideResult:
        view = await self._database.read(
            lambda s: action_records.view_of(action_records.find(s, action_id))
        )
        return DecideResult(view, run_id)
