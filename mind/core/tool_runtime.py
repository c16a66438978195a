"""The one path every tool call takes, local or remote:

1. admission: a projection with the detail mode frozen, an argument summary and a versioned
   argument projection (raw arguments only for TRANSPARENT admissions) is committed;
2. checks: unknown tool, unparseable arguments, arguments failing the tool's JSON Schema;
   then the profile's `before_tool_call` hook, which may block the call (`denied`);
3. authorization (`Authorizer`), under the name and effect a `CallClassifier` tool gives the
   call (an awareness tool names the adapter action), else the tool's own;
4. execution, with progress reported on the ephemeral bus; the profile's `after_tool_call`
   hook may replace the outcome the model sees;
5. terminal: the projection's terminal and the tool result message commit together, once.

Every failure is a tool result the model reads (`is_error`); nothing here ends the run except
cancellation, which records the call as cancelled and then propagates.

Some executions outlive the Mind process (Hand tasks). The `ExecutionLedger` knows them: a call
that already has one is never executed again — after a restart it is `reconcile`d with it, and a
stop leaves it open (no terminal) so the next start can take its result.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mind.conversation.history import HistoryMessage
from mind.profiles import hooks
from mind.profiles.model import DEFAULT_PROFILE, Profile, ToolCallInfo
from mind.providers.base import ToolCall
from mind.sealing.limits import capped_result
from mind.sealing.sensitivity import dataset_of
from mind.tools.authorizer import Authorizer, CallUnderReview, Verdict, VerdictKind
from mind.tools.base import (
    ApprovalBinding,
    CallClass,
    CallClassifier,
    DetailMode,
    Effect,
    Tool,
    ToolContext,
    ToolOutcome,
)
from mind.tools.decision import decision_text
from mind.tools.summary import argument_projection, summarize_arguments, summarize_result
from tobe import telemetry
from tobe.telemetry import instruments

log = logging.getLogger(__name__)

_NEXT_TURN = "it became available during this turn and can be used from the next one"


@dataclass(frozen=True)
class Admission:
    tool_call_id: str
    tool: str
    hand_id: str
    mode: DetailMode
    arguments_summary: str
    arguments_projection: dict[str, Any]


@dataclass(frozen=True)
class Terminal:
    tool_call_id: str
    tool: str
    mode: DetailMode
    # succeeded | failed | denied | skipped | cancelled
    status: str
    # What the model reads as the tool result.
    model_text: str
    is_error: bool
    result_summary: str
    # Raw result only for TRANSPARENT admissions.
    result_projection: dict[str, Any]
    # References of the (already stored) images the result carries (`ToolOutcome.images`).
    images: tuple[dict[str, Any], ...] = ()


class ExecutionLedger(Protocol):
    """Executions recorded outside this process, by tool call id (the Hand task registry)."""

    async def recorded(self, tool_call_id: str) -> bool:
        """Whether the call already has an execution (it must never get a second one)."""
        ...

    async def ended(self, tool_call_id: str) -> ToolOutcome | None:
        """The outcome of the call's execution if it has ended; None if none or still open."""
        ...

    async def outcome(
        self, tool_call_id: str, report_progress: Callable[[str, float | None], None]
    ) -> ToolOutcome | None:
        """Wait for the call's recorded execution to end; None when it has none.

        A cancel while waiting cancels that execution, unless the Mind is stopping.
        """
        ...


class ProjectionJournal(Protocol):
    """Durable writes of the lifecycle; each call is one transaction with its events."""

    async def admit(self, admission: Admission) -> None: ...

    async def finish(self, terminal: Terminal) -> HistoryMessage: ...

    async def skip(self, admission: Admission, terminal: Terminal) -> HistoryMessage: ...


@dataclass
class RunScope:
    """What the runtime needs to know about the run a call belongs to."""

    conversation_key: str
    run_id: str
    principal: str
    detail_mode: DetailMode
    journal: ProjectionJournal
    report_progress: Callable[[str, str, float | None], None]
    permissions: dict[str, bool] = field(default_factory=dict)
    # Trust of the observation that triggered the run ("" when none did: `runs.trust_of`).
    trust: str = ""
    # What started the run, shown with its approval requests ("" for a person's message).
    origin: str = ""
    # Who sees the conversation's events (its owner and members).
    audience: list[str] = field(default_factory=list)
    # What the conversation runs with: its tools, thinking level and hooks.
    profile: Profile = DEFAULT_PROFILE
    # A sealed run's sensitive tools (name → dataset, `mind.sealing`); empty when not sealed.
    sensitive: dict[str, str] = field(default_factory=dict)
    # The tools offered in the run's current step (set by the loop before its calls run).
    offered: frozenset[str] = frozenset()


def _terminal(
    scope: RunScope,
    call: ToolCall,
    status: str,
    text: str,
    ok: bool,
    images: tuple[dict[str, Any], ...] = (),
) -> Terminal:
    transparent = scope.detail_mode is DetailMode.TRANSPARENT
    return Terminal(
        tool_call_id=call.id,
        tool=call.name,
        mode=scope.detail_mode,
        status=status,
        model_text=text,
        is_error=not ok,
        result_summary=summarize_result(status, text, len(images)),
        result_projection={"text": text} if transparent else {},
        images=images,
    )


def _finished(scope: RunScope, call: ToolCall, outcome: ToolOutcome) -> Terminal:
    text = outcome.output if outcome.ok else f"error: {outcome.error or outcome.output}"
    if call.name in scope.sensitive:
        text = capped_result(text)
    images = outcome.images if outcome.ok else ()
    return _terminal(scope, call, outcome.display_status, text, outcome.ok, images)


def _admission(scope: RunScope, call: ToolCall, tool: Tool | None) -> Admission:
    return Admission(
        tool_call_id=call.id,
        tool=call.name,
        hand_id=tool.hand_id if tool else "",
        mode=scope.detail_mode,
        arguments_summary=summarize_arguments(call.arguments, call.raw_arguments),
        arguments_projection=argument_projection(
            call.arguments, call.raw_arguments, scope.detail_mode is DetailMode.TRANSPARENT
        ),
    )


def _schema_problem(tool: Tool, arguments: dict[str, Any]) -> str | None:
    import jsonschema  # loaded by the first tool call, not with the Mind

    validator_cls = jsonschema.validators.validator_for(tool.parameters)
    error = jsonschema.exceptions.best_match(validator_cls(tool.parameters).iter_errors(arguments))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "<root>"
    return f"arguments do not match the schema of {tool.name}: at {where}: {error.message}"


class ToolRuntime:
    def __init__(self, authorizer: Authorizer, ledger: ExecutionLedger | None = None) -> None:
        self.authorizer = authorizer
        self.ledger = ledger
        self.shutting_down = False
        # Calls whose approval wait a shutdown cut: their admission stays open (no terminal),
        # so the next start continues them once the approval is decided.
        self._left_open: set[str] = set()

    def begin_shutdown(self) -> None:
        """Cancellations from now on come from a stop, not from a user: keep approvals pending."""
        self.shutting_down = True
        self.authorizer.begin_shutdown()

    async def execute(self, call: ToolCall, tool: Tool | None, scope: RunScope) -> HistoryMessage:
        """Run one call through the whole lifecycle; returns the stored tool result message."""
        await scope.journal.admit(_admission(scope, call, tool))
        return await self.resume(call, tool, scope)

    async def resume(self, call: ToolCall, tool: Tool | None, scope: RunScope) -> HistoryMessage:
        """Steps 2-5 for a call already admitted (by a run a restart interrupted while the
        call waited for approval; see `mind.conversation.continuation`)."""
        with telemetry.span(f"tool {call.name}", attributes=_call_attributes(call, scope)) as span:
            try:
                terminal = await self._decide_and_run(call, tool, scope)
            except asyncio.CancelledError:
                instruments.tool_calls.add(1, {"tool": call.name, "outcome": "cancelled"})
                await asyncio.shield(self._cancelled(call, scope))
                raise
            span.set_attribute("tobe.tool.outcome", terminal.status)
            instruments.tool_calls.add(1, {"tool": call.name, "outcome": terminal.status})
            return await scope.journal.finish(terminal)

    async def recorded(self, tool_call_id: str) -> bool:
        """Whether the call already has an execution (a Hand task, a child run)."""
        return self.ledger is not None and await self.ledger.recorded(tool_call_id)

    async def reconcile(self, call: ToolCall, scope: RunScope) -> HistoryMessage | None:
        """Finish an admitted call with the execution it already has (waiting for it to end);
        None when it has none, so it still has to run (`resume`)."""
        if self.ledger is None:
            return None
        try:
            outcome = await self.ledger.outcome(call.id, self._progress_of(call, scope))
        except asyncio.CancelledError:
            await asyncio.shield(self._cancelled(call, scope))
            raise
        if outcome is None:
            return None
        return await scope.journal.finish(_finished(scope, call, outcome))

    async def _cancelled(self, call: ToolCall, scope: RunScope) -> None:
        """Record a cancelled call, unless a stop must leave it open for the next start.

        A call whose execution ended anyway (a Hand that finished while asked to stop) records
        that ending: the call's terminal never disagrees with its execution's.
        """
        if call.id in self._left_open:
            self._left_open.discard(call.id)
            return
        if self.ledger is not None:
            if self.shutting_down and await self.ledger.recorded(call.id):
                return
            ended = await self.ledger.ended(call.id)
            if ended is not None:
                await scope.journal.finish(_finished(scope, call, ended))
                return
        terminal = _terminal(scope, call, "cancelled", "error: the run was cancelled", False)
        await scope.journal.finish(terminal)

    async def skip(
        self, call: ToolCall, tool: Tool | None, scope: RunScope, why: str
    ) -> HistoryMessage:
        """Record a call that will never run (admission and `skipped` terminal together)."""
        terminal = _terminal(scope, call, "skipped", f"error: not executed: {why}", False)
        return await scope.journal.skip(_admission(scope, call, tool), terminal)

    async def _decide_and_run(self, call: ToolCall, tool: Tool | None, scope: RunScope) -> Terminal:
        if tool is None:
            return _terminal(
                scope, call, "failed", f"error: there is no tool named {call.name!r}", False
            )
        if dataset_of(tool) and tool.name not in scope.sensitive:
            # It appeared after the run started, which was therefore not sealed: what this
            # run writes stays readable, so a sensitive tool must not run in it.
            return _terminal(
                scope,
                call,
                "failed",
                f"error: {tool.name} reads sensitive data; {_NEXT_TURN}",
                False,
            )
        arguments = call.arguments
        if arguments is None:
            unreadable = call.argument_error or "arguments are not a JSON object"
            return _terminal(scope, call, "failed", f"error: {unreadable}", False)
        problem = _schema_problem(tool, arguments)
        if problem is not None:
            return _terminal(scope, call, "failed", f"error: {problem}", False)
        profile = scope.profile
        info = ToolCallInfo(
            scope.conversation_key, scope.run_id, call.id, call.name, dict(arguments)
        )
        blocked = await hooks.blocked(profile, info)
        if blocked is not None:
            return _terminal(scope, call, "denied", f"error: the call was denied: {blocked}", False)
        try:
            with telemetry.span(f"approval {call.name}") as span:
                verdict = await self._authorize(call, arguments, tool, scope)
                span.set_attribute("tobe.verdict", verdict.kind.name.lower())
        except asyncio.CancelledError:
            if self.shutting_down:
                self._left_open.add(call.id)
            raise
        if verdict.kind is not VerdictKind.ALLOW:
            reason = verdict.reason or "not allowed"
            if verdict.kind is VerdictKind.ASK:
                reason = f"approval required and not given: {reason}"
            return _terminal(scope, call, "denied", f"error: the call was denied: {reason}", False)
        outcome = await self._run(call, tool, scope, verdict.approval)
        outcome = await hooks.after_call(profile, info, outcome)
        return _finished(scope, call, outcome)

    async def _authorize(
        self, call: ToolCall, arguments: dict[str, Any], tool: Tool, scope: RunScope
    ) -> Verdict:
        """Review `call`, whose `arguments` are known to be a JSON object, under the name and
        effect its tool gives it (a `CallClassifier`), else the tool's own."""
        if isinstance(tool, CallClassifier):
            judged = await tool.classify(arguments)
        else:
            judged = CallClass(tool.name, Effect(tool.effect))
        return await self.authorizer.authorize(
            CallUnderReview(
                tool=judged.name,
                aliases=judged.aliases,
                effect=judged.effect,
                hand_id=tool.hand_id,
                arguments=arguments,
                conversation_key=scope.conversation_key,
                run_id=scope.run_id,
                tool_call_id=call.id,
                principal=scope.principal,
                detail_mode=scope.detail_mode,
                decision_text=decision_text(tool, arguments),
                run_permissions=scope.permissions,
                run_trust=scope.trust,
                run_origin=scope.origin,
                parameters=tool.parameters,
            )
        )

    async def _run(
        self, call: ToolCall, tool: Tool, scope: RunScope, approval: ApprovalBinding | None
    ) -> ToolOutcome:
        progress = self._progress_of(call, scope)
        context = ToolContext(
            conversation_key=scope.conversation_key,
            run_id=scope.run_id,
            tool_call_id=call.id,
            principal=scope.principal,
            detail_mode=scope.detail_mode,
            report_progress=progress,
            approval=approval,
            permissions=dict(scope.permissions),
            trust=scope.trust,
            offered=scope.offered,
        )
        try:
            # The Hand's execution span continues this one (the offer carries its context).
            with telemetry.span(f"run {tool.name}"):
                return await tool.run(dict(call.arguments or {}), context)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken tool must not end the run
            log.exception("tool %s raised", tool.name)
            failure = f"the tool failed unexpectedly: {type(exc).__name__}"
            return ToolOutcome(ok=False, error=failure)

    @staticmethod
    def _progress_of(call: ToolCall, scope: RunScope) -> Callable[[str, float | None], None]:
        summary_only = scope.detail_mode is DetailMode.SUMMARY

        def progress(message: str, fraction: float | None) -> None:
            scope.report_progress(call.id, "" if summary_only else message, fraction)

        return progress


def _call_attributes(call: ToolCall, scope: RunScope) -> dict[str, telemetry.AttributeValue]:
    """A tool call's span attributes (`gen_ai.*`); its arguments only where content may be
    traced (`telemetry.content`, never in a sealed run)."""
    attributes: dict[str, telemetry.AttributeValue] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "tobe.run.id": scope.run_id,
    }
    if telemetry.content_allowed(sealed=bool(scope.sensitive)):
        attributes["gen_ai.tool.call.arguments"] = json.dumps(call.arguments, ensure_ascii=False)
    return attributes
