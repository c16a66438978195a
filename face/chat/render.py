"""Terminal rendering of conversation events with rich: streamed markdown, tool calls, runs,
approvals and actions waiting for the owner."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.text import Text

from face.chat.children import ChildCards
from face.chat.live import LiveRegion
from face.chat.transcript import (
    call_line,
    history_renderables,
    message_renderables,
    pretty_json,
    quote_line,
    result_line,
)
from tobe import schedules
from tobe.v1 import common_pb2, events_pb2, mind_pb2

TERMINAL_RUN_STATES = {
    common_pb2.RUN_STATE_COMPLETED,
    common_pb2.RUN_STATE_FAILED,
    common_pb2.RUN_STATE_CANCELLED,
    common_pb2.RUN_STATE_INTERRUPTED,
}
_DECISIONS = {
    common_pb2.APPROVAL_DECISION_UNSPECIFIED: "waiting for a decision",
    common_pb2.APPROVAL_DECISION_APPROVE_ONCE: "approved once",
    common_pb2.APPROVAL_DECISION_APPROVE_CONVERSATION: "approved for this conversation",
    common_pb2.APPROVAL_DECISION_DENY: "denied",
    common_pb2.APPROVAL_DECISION_EXPIRED: "expired (denied)",
}
# What made the Mind compact, as said after "compacted"; a requested one needs no reason.
_COMPACTION_REASONS = {
    events_pb2.COMPACTION_TRIGGER_REQUESTED: "",
    events_pb2.COMPACTION_TRIGGER_BUDGET: " (context budget reached)",
    events_pb2.COMPACTION_TRIGGER_OVERFLOW: " (the model's context window overflowed)",
}
# What starts a proactive run (`Run.trigger`), and the events of a run's steps.
PROACTIVE_TRIGGER = "schedule"
# A child run's conversation (`delegate`), never listed: its parent's card shows it.
CHILD_PREFIX = "p_sub_"
_RUN_STEPS = frozenset(
    {"message_appended", "tool_changed", "text_delta", "thinking_delta", "tool_progress"}
)
# How a pending approval of the current conversation is answered (the REPL's prompt).
APPROVAL_ANSWERS = "answer y = approve once, a = always in this conversation, n [reason] = deny"
# Characters of a memory entry's text shown by `/memory` (its first line).
MEMORY_PREVIEW_CHARS = 100


def compaction_line(compaction: events_pb2.ContextCompacted) -> str:
    """One line saying what a compaction summarised and what it saved."""
    count = compaction.messages_summarised
    return (
        f"compacted{_COMPACTION_REASONS.get(compaction.trigger, '')}: {count} "
        f"message{'' if count == 1 else 's'} summarised (generation {compaction.generation}); "
        f"context ~{compaction.tokens_before:,} → ~{compaction.tokens_after:,} tokens"
    )


def memory_changed_line(change: events_pb2.MemoryChanged) -> str:
    """One line saying which memory entry changed, and whether the model or the owner did it."""
    what = "forgot" if change.deleted else f"remembered ({change.size_bytes} bytes)"
    by = "" if change.run_id else " by the owner"
    return f"memory {change.key}: {what}{by}"


def memory_lines(memory: mind_pb2.ListMemoryResponse) -> list[str]:
    """`/memory`: each entry as `key: start of its text`, then the total."""
    lines = []
    for entry in memory.entries:
        text = " ".join(entry.text.split())
        if len(text) > MEMORY_PREVIEW_CHARS:
            text = text[:MEMORY_PREVIEW_CHARS] + "…"
        lines.append(f"{entry.key}: {text}")
    count = len(memory.entries)
    lines.append(
        f"{count} entr{'y' if count == 1 else 'ies'}, {memory.total_bytes} bytes"
        if count
        else "nothing remembered"
    )
    return lines


def schedule_line(action: common_pb2.ScheduledAction) -> str:
    """One scheduled action: id, title, when it fires, its next time in the owner's zone, state
    and last outcome."""
    parts = [f"{action.id}  {action.title}", schedules.describe_trigger(action.trigger)]
    if next_time := schedules.next_time(action):
        parts.append(f"next {next_time}")
    parts.append(schedules.state_word(action.state))
    if outcome := schedules.outcome_word(action):
        parts.append(f"last {outcome}")
    return " · ".join(parts)


def schedule_lines(actions: Sequence[common_pb2.ScheduledAction]) -> list[str]:
    """`/schedules`: one line per action, or that there are none."""
    return [schedule_line(a) for a in actions] or ["nothing scheduled"]


def schedule_changed_line(action: common_pb2.ScheduledAction) -> str:
    """The one status line a `schedule_changed` event shows."""
    state = schedules.state_word(action.state)
    if action.HasField("last_firing") and state == "active":
        outcome = schedules.outcome_word(action)
        what = "fired" if outcome == "running" else f"fired: {outcome}"
    else:
        what = state
    following = schedules.next_time(action)
    return f"schedule {action.id} ({action.title}): {what}" + (
        f"; next {following}" if following else ""
    )


_ACTION_STATES = {
    common_pb2.PENDING_ACTION_STATE_CONFIRMED: "✓ confirmed",
    common_pb2.PENDING_ACTION_STATE_CANCELLED: "✗ declined",
    common_pb2.PENDING_ACTION_STATE_AMENDED: "✎ amended",
    common_pb2.PENDING_ACTION_STATE_EXPIRED: "⌛ expired",
}


def pending_action_line(action: common_pb2.PendingAction) -> str:
    """One status line for an action waiting for the owner, or for what became of it."""
    if action.state == common_pb2.PENDING_ACTION_STATE_PENDING:
        return (
            f"⏳ waiting for your confirmation: {action.title} [{action.id}] — /confirm, "
            "/decline or /amend"
        )
    state = _ACTION_STATES.get(action.state, "decided")
    then = f" → {action.outcome}" if action.outcome else ""
    return f"{state}: {action.title} [{action.id}]{then}"


class Renderer:
    """Draws the events of the current conversation; notes activity elsewhere in one line.

    What streams and what runs lives in a `LiveRegion`; every durable event is printed once,
    above it, in the order the events arrive.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.conversation = ""
        # Texts this terminal sent whose echo (a message_appended event) is not shown again.
        self.sent_texts: list[str] = []
        self.live = LiveRegion(console)
        self._run_ended: dict[str, asyncio.Event] = {}
        # Assistant messages seen per run: the step the next one ends. Deltas of an ended step
        # may arrive after its durable message; they are stale.
        self._finished_steps: dict[str, int] = {}
        # Called with each pending approval of the current conversation (the REPL asks y/a/n).
        self.on_approval_request: Callable[[common_pb2.Approval], None] | None = None
        # Compactions shown, by conversation and generation: a `/compact` reply and its event
        # say the same, and whichever arrives second is not shown again.
        self._compactions_shown: set[tuple[str, int]] = set()
        # The line last shown for each scheduled action: a `/pause` reply and its event say
        # the same, and whichever arrives second is not shown again.
        self._schedule_lines: dict[str, str] = {}
        # Proactive runs (a scheduled action's firing) in progress: what they read and think is
        # not a reply; only what they send is, as a posted message.
        self._proactive: set[str] = set()
        # The newest view of each running `delegate` call's child run.
        self.children = ChildCards()

    def run_finished(self, run_id: str) -> asyncio.Event:
        return self._run_ended.setdefault(run_id, asyncio.Event())

    def status(self, message: str) -> None:
        self.live.print(Text(message, style="dim"))

    def show_history(
        self,
        messages: Sequence[common_pb2.Message],
        tools: Sequence[common_pb2.ToolProjection],
        children: Sequence[common_pb2.ChildView] = (),
    ) -> None:
        """Print a snapshot's messages with their tool calls (a `delegate` call's child run
        nested under it), as they looked live; a running call's child goes on live."""
        self.live.print(*history_renderables(messages, tools, children))
        running = {t.tool_call_id for t in tools if t.status == common_pb2.TOOL_STATUS_RUNNING}
        for view in children:
            if view.tool_call_id in running:
                self.children.seen(view)

    def show_compaction(self, key: str, compaction: events_pb2.ContextCompacted) -> None:
        """Say what a compaction of conversation `key` did, once per generation."""
        shown = (key, compaction.generation)
        if shown not in self._compactions_shown:
            self._compactions_shown.add(shown)
            self.status(compaction_line(compaction))

    def show_memory(self, memory: mind_pb2.ListMemoryResponse) -> None:
        self.live.print(*(Text(line) for line in memory_lines(memory)))

    def show_schedules(self, actions: Sequence[common_pb2.ScheduledAction]) -> None:
        self.live.print(*(Text(line) for line in schedule_lines(actions)))

    def show_schedule_change(self, action: common_pb2.ScheduledAction) -> None:
        """Say how a scheduled action changed, once per change."""
        line = schedule_changed_line(action)
        if self._schedule_lines.get(action.id) != line:
            self._schedule_lines[action.id] = line
            self.status(line)

    def on_event(self, event: events_pb2.Event) -> None:
        if event.conversation_key and event.conversation_key != self.conversation:
            self._elsewhere(event)
            return
        kind = event.WhichOneof("payload")
        if kind is None or self._of_proactive_run(kind, getattr(event, kind)):
            return
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(getattr(event, kind))

    def _of_proactive_run(self, kind: str, payload: object) -> bool:
        """Whether the event is a step of a proactive run, shown only by its outcome."""
        if kind == "run_changed":
            assert isinstance(payload, common_pb2.Run)
            if payload.trigger != PROACTIVE_TRIGGER:
                return False
            if payload.state in TERMINAL_RUN_STATES:
                self._proactive.discard(payload.id)
                self.run_finished(payload.id).set()
            else:
                self._proactive.add(payload.id)
            return True
        if kind in _RUN_STEPS:
            return getattr(payload, "run_id", "") in self._proactive
        return False

    def _elsewhere(self, event: events_pb2.Event) -> None:
        kind = event.WhichOneof("payload")
        key = event.conversation_key
        if key.startswith(CHILD_PREFIX):
            return  # a sub-agent's: its parent's `delegate` call shows what it does
        if kind == "message_appended" and event.message_appended.role in (
            common_pb2.MESSAGE_ROLE_ASSISTANT,
            common_pb2.MESSAGE_ROLE_USER,
        ):
            self.status(f"[new message in {key}]")
        elif kind == "approval_changed":
            self._on_approval_changed(event.approval_changed, here=False)
        elif (
            kind == "action_changed"
            and event.action_changed.state == common_pb2.PENDING_ACTION_STATE_PENDING
        ):
            self.status(f"{pending_action_line(event.action_changed)} (in {key})")

    # -- streaming ------------------------------------------------------------------------------

    def _on_text_delta(self, delta: events_pb2.TextDelta) -> None:
        if not self._stale(delta):
            self.live.stream(delta.step, delta.text)

    def _on_thinking_delta(self, delta: events_pb2.TextDelta) -> None:
        if not self._stale(delta):
            self.live.stream(delta.step, delta.text, thinking=True)

    def _stale(self, delta: events_pb2.TextDelta) -> bool:
        ended = self._run_ended.get(delta.run_id)
        if ended is not None and ended.is_set():
            return True
        return delta.step < self._finished_steps.get(delta.run_id, 0)

    def _on_tool_progress(self, progress: events_pb2.ToolProgress) -> None:
        if progress.HasField("child"):
            self.live.tool_nested(progress.tool_call_id, self.children.seen(progress.child))
        if not progress.message and progress.fraction < 0:
            return
        share = f" {progress.fraction:.0%}" if progress.fraction >= 0 else ""
        self.live.tool_progress(progress.tool_call_id, f"{progress.message}{share}".strip())

    # -- durable events -------------------------------------------------------------------------

    def _on_message_appended(self, message: common_pb2.Message) -> None:
        if message.role == common_pb2.MESSAGE_ROLE_USER and message.text in self.sent_texts:
            self.sent_texts.remove(message.text)
            if message.reply_to:  # what the typed `/reply ID` quoted
                self.live.print(quote_line(message.quote))
            return
        if message.role == common_pb2.MESSAGE_ROLE_ASSISTANT and not message.posted_by:
            # The model's message ends its step and replaces what streamed for it. Steps are
            # counted by messages; a step that stored none (a retried overflow) is caught up
            # by finding the message's text among the streamed steps.
            step = self._finished_steps.get(message.run_id, 0)
            step = max(step, self.live.streamed_step(message.text) or 0)
            self._finished_steps[message.run_id] = step + 1
            self.live.drop_through(step)
        self.live.print(*message_renderables(message))

    def _on_message_queued(self, queued: events_pb2.QueuedMessage) -> None:
        how = "steers the running reply" if queued.steer else "queued as a follow-up"
        self.status(f"message {how}")

    def _on_context_compacted(self, compaction: events_pb2.ContextCompacted) -> None:
        self.show_compaction(self.conversation, compaction)

    def _on_memory_changed(self, change: events_pb2.MemoryChanged) -> None:
        self.status(memory_changed_line(change))

    def _on_schedule_changed(self, action: common_pb2.ScheduledAction) -> None:
        self.show_schedule_change(action)

    def _on_action_changed(self, action: common_pb2.PendingAction) -> None:
        self.status(pending_action_line(action))

    def _on_tool_changed(self, tool: common_pb2.ToolProjection) -> None:
        if tool.status == common_pb2.TOOL_STATUS_RUNNING:
            self.live.print(call_line(tool))
            self.live.tool_started(tool.tool_call_id, tool.tool)
            return
        self.live.tool_ended(tool.tool_call_id)
        self.live.print(result_line(tool), *self.children.ended(tool.tool_call_id))

    def _on_run_changed(self, run: common_pb2.Run) -> None:
        if run.state not in TERMINAL_RUN_STATES:
            return
        unsaid = self.live.finish()
        if run.state != common_pb2.RUN_STATE_COMPLETED:
            state = common_pb2.RunState.Name(run.state).removeprefix("RUN_STATE_").lower()
            shown: list[RenderableType] = [Markdown(unsaid)] if unsaid.strip() else []
            shown.append(Text(f"run {state}: {run.reason}".rstrip(": "), style="red"))
            self.live.print(*shown)
        self.run_finished(run.id).set()

    def _on_approval_changed(self, approval: common_pb2.Approval, *, here: bool = True) -> None:
        """`here`: the event came to this conversation (its own request, or a sub-agent's of
        one of its `delegate` calls, which the Mind sends to the conversation watched)."""
        pending = approval.decision == common_pb2.APPROVAL_DECISION_UNSPECIFIED
        if here and (call := self.children.asked(approval)):
            self.live.tool_nested(call, self.children.lines(call))
        if pending and here and self.on_approval_request:
            self.live.pause()  # the REPL asks; it resumes the region once answered
        self.live.print(*approval_renderables(approval, here=here))
        if pending and here and self.on_approval_request:
            self.on_approval_request(approval)


def approval_renderables(approval: common_pb2.Approval, *, here: bool) -> list[RenderableType]:
    """An approval's line; while it waits, what is decided on and how to answer."""
    decision = _DECISIONS.get(approval.decision, "decided")
    shown: list[RenderableType] = [
        Text.assemble(
            ("approval ", "bold magenta"),
            (approval.id, "magenta"),
            f" {approval.tool}",
            (f" — {decision}", "bold"),
            (f" ({approval.reason})" if approval.reason else "", "dim"),
        )
    ]
    if approval.decision != common_pb2.APPROVAL_DECISION_UNSPECIFIED:
        return shown
    # What the person decides on, in full: the tool's decision text (every mode).
    decided_on = (
        approval.decision_text or pretty_json(approval.arguments_json) or approval.arguments_summary
    )
    shown.append(Padding(Text(decided_on, style="bold"), (0, 0, 0, 2)))
    if approval.delegate_call_id:
        child = f"asked by a sub-agent (its conversation {approval.conversation_key})"
        shown.append(Padding(Text(child, style="cyan"), (0, 0, 0, 2)))
    if approval.origin:
        # What started the run: how far to trust what it asks for.
        origin = Text(f"asked by a run started by {approval.origin}", style="yellow")
        shown.append(Padding(origin, (0, 0, 0, 2)))
    how = (
        APPROVAL_ANSWERS
        if here
        else f"in {approval.conversation_key}: /switch {approval.conversation_key} to answer"
    )
    shown.append(Padding(Text(how, style="dim"), (0, 0, 0, 2)))
    return shown
