"""The parent's `delegate` card with a real `tobe mind serve`, the Scripted model and the
marking Hand: the child's view (its tool calls with their states, its latest text) arrives
live on the call's tool progress, and the parent's snapshot and history rebuild the same view
from the store once it has ended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from crash_checks import start_marking_hand
from helpers.mind_process import issue_token, running_mind
from remote_processes import Chat

from tobe.v1 import common_pb2, events_pb2, mind_pb2

pytestmark = pytest.mark.e2e

PARENT = "p_parent"
MARK = "laptop__mark"


def script() -> str:
    """The parent hands on one slow mark; the child answers with what the Hand said."""
    parent = {
        "match": "^delegate one$",
        "steps": [
            {"tool_calls": [{"name": "delegate", "arguments": {"task": "mark a"}}]},
            {"expect": {"last_contains": "Child a marked it."}, "text": "The child marked it."},
        ],
    }
    child = {
        "match": "^mark a$",
        "steps": [
            {"tool_calls": [{"name": MARK, "arguments": {"label": "a", "seconds": 2.0}}]},
            {"expect": {"last_contains": "marked a"}, "text": "Child a marked it."},
        ],
    }
    return yaml.safe_dump({"runs": [parent, child]})


def answered(events: list[events_pb2.Event]) -> bool:
    return any(
        e.WhichOneof("payload") == "message_appended"
        and e.conversation_key == PARENT
        and e.message_appended.text == "The child marked it."
        for e in events
    )


def child_views(events: list[events_pb2.Event]) -> list[common_pb2.ChildView]:
    return [
        e.tool_progress.child
        for e in events
        if e.WhichOneof("payload") == "tool_progress" and e.tool_progress.HasField("child")
    ]


def calls_of(view: common_pb2.ChildView) -> list[tuple[str, int]]:
    return [(call.tool, call.status) for call in view.calls]


def test_the_delegate_card_shows_the_childs_calls_live_and_a_snapshot_rebuilds_them(
    tmp_path: Path, workspace: Path
) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(script())
    allow = {"TOBE_APPROVALS__EXTERNAL_SIDE_EFFECT": "allow"}
    with running_mind(tmp_path, script=path, clients=(), **allow) as mind:
        token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
        hand = start_marking_hand(mind, workspace, token)
        chat = Chat(mind.address, mind.gateway_metadata)
        try:
            hand.wait_attached()
            chat.create(PARENT)
            chat.send(PARENT, "delegate one", "k1")
            events = chat.events_until(answered, timeout=90)
            views = child_views(events)
            assert views, "no child view reached the parent's card"
            assert all(v.conversation_key.startswith("p_sub_") for v in views)
            assert (MARK, common_pb2.TOOL_STATUS_RUNNING) in [
                call for view in views for call in calls_of(view)
            ], "the child's running call was never shown"
            final = views[-1]
            assert calls_of(final) == [(MARK, common_pb2.TOOL_STATUS_SUCCEEDED)]
            assert (final.calls_total, final.latest_text) == (1, "Child a marked it.")

            who: Any = chat.who()
            snapshot = chat.stub.GetSnapshot(
                mind_pb2.GetSnapshotRequest(on_behalf_of=who, conversation_key=PARENT),
                metadata=chat.metadata,
                timeout=10,
            )
            (delegate,) = [t for t in snapshot.tools if t.tool == "delegate"]
            assert [c.tool_call_id for c in snapshot.children] == [delegate.tool_call_id]
            assert snapshot.children[0] == final
            history = chat.stub.GetHistory(
                mind_pb2.GetHistoryRequest(on_behalf_of=who, conversation_key=PARENT),
                metadata=chat.metadata,
                timeout=10,
            )
            assert list(history.children) == [final]
        finally:
            chat.close()
            hand.kill()
