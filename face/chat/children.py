"""A `delegate` call's child run (a sub-agent) in `tobe chat`: nested lines under the call —
the child's latest tool calls with their states and summaries, then its latest text
(`transcript.child_lines`).

The Mind sends the child's whole view with each progress of the call and again in a snapshot,
so the lines are drawn from one view: under the call's spinner while it runs, printed under
its result line when it ends, and under the call when a conversation is opened again.
"""

from __future__ import annotations

from rich.text import Text

from face.chat.transcript import child_lines
from tobe.v1 import common_pb2


class ChildCards:
    """The newest view of each `delegate` call's child, and which of the children's calls
    wait for the person's approval."""

    def __init__(self) -> None:
        self._views: dict[str, common_pb2.ChildView] = {}
        self._awaiting: set[str] = set()

    def seen(self, view: common_pb2.ChildView) -> list[Text]:
        """Keep `view` as its call's newest; its lines."""
        self._views[view.tool_call_id] = view
        return self.lines(view.tool_call_id)

    def lines(self, call_id: str) -> list[Text]:
        view = self._views.get(call_id)
        return [] if view is None else child_lines(view, frozenset(self._awaiting))

    def asked(self, approval: common_pb2.Approval) -> str:
        """Note a sub-agent's approval (pending or decided); the `delegate` call whose lines
        change ("" for a request of the conversation's own run)."""
        if not approval.delegate_call_id:
            return ""
        if approval.decision == common_pb2.APPROVAL_DECISION_UNSPECIFIED:
            self._awaiting.add(approval.tool_call_id)
        else:
            self._awaiting.discard(approval.tool_call_id)
        return approval.delegate_call_id

    def ended(self, call_id: str) -> list[Text]:
        """The call ended: its last lines, printed once; the view is forgotten."""
        lines = self.lines(call_id)
        self._views.pop(call_id, None)
        return lines
