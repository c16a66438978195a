"""The `delegate` tool: a child run with its own context, tools and budget.

A call starts its child (`mind.conversation.delegations.start`: one unit, idempotent on the
call's id) and waits for the child's end, which its result becomes: the child's last answer,
or a clear error (budget exhausted, cancelled, failed). While it waits, each change of the
child (a tool call admitted or ended, an answer, a tool's progress) reaches the call's card as
its child's whole view (`mind.agent.child_cards`). Several calls of one step start together
(`runs_alongside`), so their children run at once.

`ChildRuns` is also the tool runtime's ledger of these executions (`ExecutionLedger`): a call
with a child is never run again; after a restart its continuation waits for that child's end.
Cancelling the parent's run cancels the child first (its end commits before the parent's);
a stop of the Mind leaves both to the next start. At start, a child whose parent's call has
ended anyway (`sweep`) is cancelled: no child runs for a parent that no longer waits.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from mind.agent.actors import ConversationActors
from mind.agent.child_cards import ChildCard
from mind.approvals.broker import ApprovalBroker
from mind.cluster.errors import OwnedElsewhere
from mind.conversation import delegations, inputs, runs
from mind.conversation.delegations import Ending
from mind.core.tool_registry import ToolRegistry
from mind.errors import MindError
from mind.events.bus import BusSubscription, EventBus
from mind.profiles.book import ProfileBook
from mind.sealing.sensitivity import dataset_of
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.tools.base import Effect, ToolContext, ToolOutcome
from tobe.config import DelegateSettings

log = logging.getLogger(__name__)

DELEGATE = "delegate"
PARENT_CANCELLED = "its parent run was cancelled"
# A child's conversation is never sealed: what its task says stays readable.
SEALED_RUN = (
    "this run has read sensitive data, which a child's task must not carry (a child's run "
    "is never sealed); delegate in a later turn, where that data is already removed"
)
Progress = Callable[[str, float | None], None]
# The child's events that change its view (its tool calls, its messages).
VIEW_CHANGES = ("tool_changed", "message_appended")


def _outcome(child_key: str, ending: Ending) -> ToolOutcome:
    if ending.ok:
        output = json.dumps({"child": child_key, "answer": ending.result}, ensure_ascii=False)
        return ToolOutcome(ok=True, output=output)
    status = "cancelled" if ending.state == delegations.CANCELLED else "failed"
    return ToolOutcome(ok=False, error=ending.result, status=status)


def _progress_line(row: models.OutboxEvent) -> str:
    """What one durable event of the child tells the parent's card ("" = nothing)."""
    payload = row.payload or {}
    if row.type == "tool_changed":
        status = payload.get("status", "")
        return f"{payload.get('tool', '')}: {status}" if status else ""
    if row.type == "message_appended" and payload.get("role") == "assistant":
        text = " ".join(str(payload.get("text", "")).split())
        return f"› {text[:200]}" if text else ""
    return ""


class ChildRuns:
    """Starts, follows and ends child runs; the runtime's ledger of them."""

    def __init__(
        self, database: Database, actors: ConversationActors, bus: EventBus, broker: ApprovalBroker
    ) -> None:
        self.database = database
        self.actors = actors
        self.bus = bus
        self.broker = broker

    async def _row(self, tool_call_id: str) -> models.Delegation | None:
        return await self.database.read(lambda s: delegations.of_call(s, tool_call_id))

    async def recorded(self, tool_call_id: str) -> bool:
        return await self._row(tool_call_id) is not None

    async def ended(self, tool_call_id: str) -> ToolOutcome | None:
        row = await self._row(tool_call_id)
        ending = delegations.ending(row)
        return None if row is None or ending is None else _outcome(row.child_key, ending)

    async def outcome(self, tool_call_id: str, report_progress: Progress) -> ToolOutcome | None:
        """The ledger's continuation of a call; its progress is the child's card, which
        `follow` publishes itself (`report_progress` carries only lines)."""
        del report_progress
        if await self._row(tool_call_id) is None:
            return None
        return await self.follow(tool_call_id)

    async def follow(self, tool_call_id: str) -> ToolOutcome:
        """Wait for the child of `tool_call_id` to end (starting its task if still queued),
        showing its view on the call's card. Cancelled with the parent's run, cancel the
        child; stopped with it (the Mind stops, or the parent's lease went to another Mind,
        which continues the call), leave the child running."""
        row = await self._row(tool_call_id)
        assert row is not None
        child = row.child_key
        stopping = self.actors.stop_check(row.parent_key)
        audience = self.actors.audience_of(row.parent_key)
        card = await ChildCard(
            self.database, self.bus, tool_call_id, row.parent_key, audience
        ).open()
        subscription = self.bus.subscribe(include_ephemeral=True)
        try:
            # Another Mind may run it (then the store is followed); stopped, the parent
            # leaves the child to run on.
            self.actors.drain_in_background(child)
            await card.show(f"child {child} started")
            return await self._wait(row, subscription, card)
        except asyncio.CancelledError:
            if not stopping():
                await asyncio.shield(self.cancel(tool_call_id, PARENT_CANCELLED))
            raise
        finally:
            subscription.close()

    async def _wait(
        self, row: models.Delegation, subscription: BusSubscription, card: ChildCard
    ) -> ToolOutcome:
        loop = asyncio.get_running_loop()
        timed_out = False
        while True:
            current = await self._row(row.tool_call_id)
            ending = delegations.ending(current)
            if ending is not None:
                await card.show(f"child {ending.state}")
                return _outcome(row.child_key, ending)
            left = (row.deadline_at - datetime.now(UTC)).total_seconds()
            if left <= 0 and not timed_out:
                timed_out = True
                seconds = (row.deadline_at - row.created_at).total_seconds()
                await self.cancel(row.tool_call_id, f"budget exhausted: {seconds:g} s")
                continue
            started = loop.time()
            await subscription.wait(max(0.05, min(1.0, left if left > 0 else 1.0)))
            await self._pass_on(row.child_key, subscription, card)
            if loop.time() - started < 0.01:
                await asyncio.sleep(0.05)  # a subscription that keeps waking must not spin

    @staticmethod
    async def _pass_on(child: str, subscription: BusSubscription, card: ChildCard) -> None:
        """Show the child's view once for what it did since the last wake: read again when
        its calls or messages changed (or the bus could not say: `must_read`), the note its
        latest event tells."""
        rows, must_read = subscription.take_durable()
        changed, note = must_read, ""
        for row in rows:
            if row.conversation_key == child and row.type in VIEW_CHANGES:
                changed = True
                note = _progress_line(row) or note
        for _after, event in subscription.take_ephemeral():
            if event.conversation_key == child and event.kind == "tool_progress" and event.text:
                note = f"  {event.text}"
        if changed or note:
            await card.show(note, refresh=changed)

    async def cancel(self, tool_call_id: str, reason: str) -> None:
        """Cancel the child of `tool_call_id`: its active run, or, while none runs (its task
        still queued, or its calls left open by a restart), the delegation itself with what
        would start later (its queued task, its open calls); then its pending approvals end.
        Its end commits before this returns."""
        row = await self._row(tool_call_id)
        if row is None or row.state != delegations.RUNNING:
            return
        child = row.child_key
        try:
            cancelled = await self.actors.cancel_run(child, reason)
        except OwnedElsewhere as owner:
            log.warning("ending the delegation of %s here: %s", child, owner)
            cancelled = False
        if not cancelled:
            ended = f"the child was cancelled: {reason}"

            def unit(tx: WriteTx) -> None:
                delegations.end(tx, tool_call_id, delegations.CANCELLED, ended)
                inputs.drop_queued(tx, child)
                runs.cancel_open_calls(tx, child, ended, [row.principal])

            await self.database.write(unit)
        await self._close_approvals(child, reason)

    async def _close_approvals(self, child: str, reason: str) -> None:
        """End the pending approvals of an ended child (its calls no longer wait for them)."""
        for approval in await self.broker.pending(child):
            await self.broker.close_for_ended_run(approval.id, f"the child was cancelled: {reason}")

    async def sweep(self) -> None:
        """At start: cancel each child whose parent's call no longer waits for it, and end the
        approvals a child that ended meanwhile left pending (a crash between the two)."""

        def orphans(session: Any) -> list[str]:
            found = []
            for call, _parent, _child in delegations.running_children(session):
                projection = session.get(models.ToolProjection, call)
                if projection is None or projection.status != "running":
                    found.append(call)
            return found

        for call in await self.database.read(orphans):
            log.info("cancelling the child of %s: its parent's call has ended", call)
            await self.cancel(call, "its parent's call had ended")
        for child in await self.database.read(delegations.ended_with_pending_approvals):
            await self._close_approvals(child, "it had ended")


class DelegateTool:
    """Hands a task to a child run; see the module docstring."""

    name = DELEGATE
    description = (
        "Hand a self-contained task to a child agent that works on it with its own context "
        "and returns its final answer. Several delegate calls in one step run at once. "
        "The child sees only `task`: include everything it needs. `tools` limits the tools "
        "it may call (default: the tools you have, except delegate and tools that read "
        "sensitive data, which a child never gets); `profile` names the profile it runs "
        "with; max_turns, max_tokens and max_seconds bound it. A turn that has read "
        "sensitive data cannot delegate."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "task": {"type": "string", "minLength": 1, "maxLength": 16000},
            "tools": {"type": "array", "items": {"type": "string"}, "maxItems": 64},
            "profile": {"type": "string", "maxLength": 64},
            "max_turns": {"type": "integer", "minimum": 1},
            "max_tokens": {"type": "integer", "minimum": 1},
            "max_seconds": {"type": "number", "exclusiveMinimum": 0},
        },
        "required": ["task"],
        "additionalProperties": False,
    }
    # The child's own calls are each authorized as any call is.
    effect = Effect.READ_ONLY
    hand_id = ""
    runs_alongside = True

    def __init__(
        self,
        children: ChildRuns,
        registry: ToolRegistry,
        profiles: ProfileBook,
        settings: DelegateSettings,
    ) -> None:
        self.children = children
        self.registry = registry
        self.profiles = profiles
        self.settings = settings

    def render_decision(self, arguments: dict[str, Any]) -> str:
        return f"hand a task to a child run: {arguments['task'][:120]}"

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        started = await self.children.recorded(context.tool_call_id)
        if not started:
            refused = await self._start(arguments, context)
            if refused:
                return ToolOutcome(ok=False, error=refused)
        return await self.children.follow(context.tool_call_id)

    async def _start(self, arguments: dict[str, Any], context: ToolContext) -> str:
        """Start the child; what is wrong with the call instead ("" = started)."""
        actors, key = self.children.actors, context.conversation_key
        own = await self.children.database.read(lambda s: delegations.of_child(s, key))
        depth = (own.depth if own is not None else 0) + 1
        if depth > self.settings.max_depth:
            return f"a child run may not delegate further (at most {self.settings.max_depth})"
        scope = actors.run_scope(key, context.run_id)
        if scope is None:
            return "the run that made this call is no longer active"
        try:
            profile = self.profiles.check(arguments.get("profile", "") or scope.profile.name)
        except MindError as exc:
            return str(exc)
        if scope.sensitive and await self._read_sensitive(context.run_id, list(scope.sensitive)):
            return SEALED_RUN
        tools, refused = self._tools(arguments, context, depth, scope.profile)
        if refused:
            return refused
        cap = self.settings
        seconds = min(float(arguments.get("max_seconds", cap.seconds)), cap.max_seconds)

        def unit(tx: Any) -> None:
            delegations.start(
                tx,
                tool_call_id=context.tool_call_id,
                parent_key=key,
                parent_run_id=context.run_id,
                principal=context.principal or actors.audience_of(key)[0],
                task=arguments["task"],
                profile=profile,
                mode=context.detail_mode.value,
                tools=tools,
                depth=depth,
                max_turns=min(int(arguments.get("max_turns", cap.turns)), cap.max_turns),
                max_tokens=min(int(arguments.get("max_tokens", cap.tokens)), cap.max_tokens),
                deadline_at=datetime.now(UTC) + timedelta(seconds=seconds),
            )

        # On a shared store the child's first event is fenced by its own lease.
        child = delegations.child_key_of(context.tool_call_id)
        await actors.leases.acquire(child)
        try:
            await self.children.database.write(unit)
        finally:
            # Committed, the child's task runs even if this run is stopped at this very await
            # (a stop leaves children running); not committed, there is nothing to start.
            actors.drain_in_background(child)
        return ""

    async def _read_sensitive(self, run_id: str, sensitive: list[str]) -> bool:
        return await self.children.database.read(
            lambda s: delegations.read_sensitive(s, run_id, sensitive)
        )

    def _tools(
        self, arguments: dict[str, Any], context: ToolContext, depth: int, profile: Any
    ) -> tuple[frozenset[str], str]:
        """The tools the child may call: never more than this run was offered, no
        `delegate` at the deepest level, no sensitive tool (a child's run is never sealed),
        only read-only ones below high trust."""
        offered = set(context.offered)
        if depth >= self.settings.max_depth:
            offered.discard(DELEGATE)
        known = self.registry.tools_for(context.conversation_key, profile)
        sensitive = sorted(n for n in offered if n in known and dataset_of(known[n]))
        offered -= set(sensitive)
        if context.trust not in ("", "high"):
            offered = {n for n in offered if n in known and known[n].effect is Effect.READ_ONLY}
        wanted = arguments.get("tools")
        if wanted is None:
            return frozenset(offered), ""
        if named := sorted(set(wanted) & set(sensitive)):
            return frozenset(), (
                f"a child never gets a tool that reads sensitive data: {', '.join(named)}"
            )
        missing = sorted(set(wanted) - offered)
        if missing:
            return frozenset(), (
                f"a child may only use tools this run may use; not available: {', '.join(missing)}"
            )
        return frozenset(wanted), ""
