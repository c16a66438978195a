"""Detail-mode projection: how an event or a record may be shown to one connection.

The mode frozen at admission is a ceiling. A connection sees an object in the admitted mode or
downgraded to summary, never upgraded: raw tool arguments, raw results, raw progress text and
thinking leave the gateway only when both the admission and the viewer are TRANSPARENT. The
Mind already renders in the admitted mode; these rules hold again here so that a viewer can
never get more than the admission allowed, whatever arrives.

One deliberate exception: an approval's `decision_text` (what the person decides on) is kept
in every mode, because a person can't decide on what they can't see.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, TypeVar

from google.protobuf.message import Message

from tobe.v1 import common_pb2, events_pb2, mind_pb2

SUMMARY = common_pb2.DETAIL_MODE_SUMMARY
TRANSPARENT = common_pb2.DETAIL_MODE_TRANSPARENT


def effective_mode(mode: int) -> common_pb2.DetailMode.ValueType:
    """UNSPECIFIED means SUMMARY (the safe default)."""
    return TRANSPARENT if mode == TRANSPARENT else SUMMARY


class AdmissionModes:
    """Admitted mode of recent tool calls, learned from `tool_changed` events (bounded LRU).

    Tool-result messages, approvals and progress do not carry the admitted mode themselves.
    """

    def __init__(self, capacity: int = 50_000) -> None:
        self._modes: OrderedDict[str, int] = OrderedDict()
        self._capacity = capacity

    def learn(self, event: events_pb2.Event) -> None:
        if event.WhichOneof("payload") == "tool_changed":
            self.record(event.tool_changed)

    def record(self, tool: common_pb2.ToolProjection) -> None:
        self._modes[tool.tool_call_id] = effective_mode(tool.admitted_mode)
        self._modes.move_to_end(tool.tool_call_id)
        while len(self._modes) > self._capacity:
            self._modes.popitem(last=False)

    def get(self, tool_call_id: str) -> int | None:
        return self._modes.get(tool_call_id)


def _raw_allowed(viewer: int, admitted: int | None) -> bool:
    """Raw content is shown only to a transparent viewer of a call not known as summary."""
    return viewer == TRANSPARENT and admitted != SUMMARY


def project_tool(tool: common_pb2.ToolProjection, viewer: int) -> common_pb2.ToolProjection:
    admitted = effective_mode(tool.admitted_mode)
    shown = TRANSPARENT if viewer == TRANSPARENT and admitted == TRANSPARENT else SUMMARY
    if shown == TRANSPARENT and tool.shown_mode == TRANSPARENT:
        return tool
    result = common_pb2.ToolProjection()
    result.CopyFrom(tool)
    result.shown_mode = SUMMARY
    result.arguments_json = ""
    result.result_text = ""
    return result


def project_message(
    message: common_pb2.Message, viewer: int, modes: AdmissionModes
) -> common_pb2.Message:
    hide_text = message.role == common_pb2.MESSAGE_ROLE_TOOL and not _raw_allowed(
        viewer, modes.get(message.tool_call_id)
    )
    hide_thinking = viewer != TRANSPARENT and bool(message.thinking)
    if not hide_text and not hide_thinking:
        return message
    result = common_pb2.Message()
    result.CopyFrom(message)
    if hide_text:
        result.text = ""
        # A result's images are raw content too; its summary counts them.
        del result.images[:]
    if hide_thinking:
        result.thinking = ""
    return result


def project_approval(
    approval: common_pb2.Approval, viewer: int, modes: AdmissionModes
) -> common_pb2.Approval:
    """Raw `arguments_json` only when allowed; `decision_text` always stays."""
    if not approval.arguments_json or _raw_allowed(viewer, modes.get(approval.tool_call_id)):
        return approval
    result = common_pb2.Approval()
    result.CopyFrom(approval)
    result.arguments_json = ""
    return result


def project_event(
    event: events_pb2.Event, viewer: int, modes: AdmissionModes
) -> events_pb2.Event | None:
    """The event as `viewer` may see it; None when it must not be sent at all."""
    kind = event.WhichOneof("payload")
    if kind == "thinking_delta":
        return event if viewer == TRANSPARENT else None
    if kind == "tool_changed":
        shown = project_tool(event.tool_changed, viewer)
        return event if shown is event.tool_changed else _with(event, tool_changed=shown)
    if kind == "message_appended":
        shown_message = project_message(event.message_appended, viewer, modes)
        if shown_message is event.message_appended:
            return event
        return _with(event, message_appended=shown_message)
    if kind == "approval_changed":
        shown_approval = project_approval(event.approval_changed, viewer, modes)
        if shown_approval is event.approval_changed:
            return event
        return _with(event, approval_changed=shown_approval)
    if kind == "tool_progress":
        progress = event.tool_progress
        if not progress.message or _raw_allowed(viewer, modes.get(progress.tool_call_id)):
            return event
        if modes.get(progress.tool_call_id) == SUMMARY:
            # Progress of a summary admission never carries raw output.
            return event
        hidden = events_pb2.ToolProgress()
        hidden.CopyFrom(progress)
        hidden.message = ""
        return _with(event, tool_progress=hidden)
    return event


def project_snapshot(
    snapshot: mind_pb2.GetSnapshotResponse, viewer: int
) -> mind_pb2.GetSnapshotResponse:
    result, modes = _project_transcript(snapshot, viewer)
    _replace(
        result.pending_approvals,
        [project_approval(a, viewer, modes) for a in snapshot.pending_approvals],
    )
    return result


def project_history(
    history: mind_pb2.GetHistoryResponse, viewer: int
) -> mind_pb2.GetHistoryResponse:
    return _project_transcript(history, viewer)[0]


def project_response(response: Message, viewer: int) -> Message:
    """A Mind call's response as `viewer` may see it: the transcripts (snapshot, history) are
    rendered for its mode; the other responses carry nothing a mode hides."""
    match response:
        case mind_pb2.GetSnapshotResponse():
            return project_snapshot(response, viewer)
        case mind_pb2.GetHistoryResponse():
            return project_history(response, viewer)
        case _:
            return response


_Transcript = TypeVar("_Transcript", mind_pb2.GetSnapshotResponse, mind_pb2.GetHistoryResponse)


def _project_transcript(response: _Transcript, viewer: int) -> tuple[_Transcript, AdmissionModes]:
    """A copy of `response` with its messages and tools as `viewer` sees them, and the tools'
    admitted modes (what the rest of the response is projected by)."""
    modes = _modes_of(response.tools)
    result = type(response)()
    result.CopyFrom(response)
    _replace(result.messages, [project_message(m, viewer, modes) for m in response.messages])
    _replace(result.tools, [project_tool(t, viewer) for t in response.tools])
    return result, modes


def _modes_of(tools: Iterable[common_pb2.ToolProjection]) -> AdmissionModes:
    modes = AdmissionModes()
    for tool in tools:
        modes.record(tool)
    return modes


def _replace(field: Any, items: list[Any]) -> None:
    del field[:]
    field.extend(items)


def _with(event: events_pb2.Event, **payload: object) -> events_pb2.Event:
    result = events_pb2.Event()
    result.CopyFrom(event)
    for name, value in payload.items():
        getattr(result, name).CopyFrom(value)
    return result
