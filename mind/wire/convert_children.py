"""Child runs ↔ `tobe.v1`: the view of a `delegate` call's child (`ChildView`), carried by
snapshots, history pages and the call's tool progress."""

from __future__ import annotations

from mind.events.child_views import ChildCallView, ChildView
from mind.wire.convert import TOOL_STATUSES
from tobe.v1 import common_pb2

_STATUSES_BACK = {value: status for status, value in TOOL_STATUSES.items()}


def child_to_proto(view: ChildView) -> common_pb2.ChildView:
    return common_pb2.ChildView(
        tool_call_id=view.tool_call_id,
        conversation_key=view.conversation_key,
        calls=[
            common_pb2.ChildToolCall(
                tool_call_id=call.tool_call_id,
                tool=call.tool,
                status=TOOL_STATUSES[call.status],
                arguments_summary=call.arguments_summary,
                result_summary=call.result_summary,
            )
            for call in view.calls
        ],
        calls_total=view.calls_total,
        latest_text=view.latest_text,
    )


def child_from_proto(message: common_pb2.ChildView) -> ChildView:
    return ChildView(
        tool_call_id=message.tool_call_id,
        conversation_key=message.conversation_key,
        calls=tuple(
            ChildCallView(
                tool_call_id=call.tool_call_id,
                tool=call.tool,
                status=_STATUSES_BACK[call.status],
                arguments_summary=call.arguments_summary,
                result_summary=call.result_summary,
            )
            for call in message.calls
        ),
        calls_total=message.calls_total,
        latest_text=message.latest_text,
    )
