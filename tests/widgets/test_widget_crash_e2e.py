"""A Mind killed with SIGKILL between a widget's creation and its sending loses nothing and
duplicates nothing: the widget tools ask the person (they write), so the run waits on an
approval when the Mind is killed, once before the creation and once before the sending; after
each restart the approval is decided and the call goes on in a continuation run. In the end
the conversation holds one widget with its record, one widget message, and each tool call has
exactly one result."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.admin_cli import Admin
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, running_mind
from sqlalchemy import create_engine, func, select
from trip_type import PAGE, TRIP

from mind.store import models
from tobe.v1 import common_pb2, events_pb2, mind_pb2

pytestmark = pytest.mark.e2e
KEY = "p_crash"


def _on_widget(name: str, **arguments: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "arguments_from_last": {"widget_id": "widget_id"}}


RUNS = [
    {
        "match": "^plan",
        "steps": [
            {
                "tool_calls": [
                    {"name": "widget_create", "arguments": {"type": "trip", "title": "Oslo"}}
                ]
            },
            {
                "expect": {"last_role": "tool", "last_contains": '"title":"Oslo"'},
                "tool_calls": [
                    _on_widget(
                        "widget_write", module="stops", record_id="r1", data={"place": "Oslo"}
                    )
                ],
            },
            {
                "expect": {"last_role": "tool", "last_contains": '"record_id":"r1"'},
                "tool_calls": [_on_widget("widget_send", summary="Two days in Oslo")],
            },
            {"expect": {"last_role": "tool", "last_contains": '"sent":'}, "text": "Sent."},
        ],
    },
]


@pytest.fixture(scope="module")
def mind(module_store: str) -> Iterator[MindProcess]:
    root = Path(tempfile.mkdtemp(prefix="twcr-"))
    script = root / "script.yaml"
    script.write_text(json.dumps({"runs": RUNS}), encoding="utf-8")
    try:
        # The widget tools write: each call asks the person (the default policy).
        with running_mind(root, script=script) as mind:
            yield mind
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _pending(tool: str) -> Callable[[list[events_pb2.Event]], bool]:
    def done(events: list[events_pb2.Event]) -> bool:
        return any(
            a.tool == tool and a.decision == common_pb2.APPROVAL_DECISION_UNSPECIFIED
            for a in payloads(events, "approval_changed")
        )

    return done


def _approve_pending(gateway: Gateway, tool: str) -> None:
    events = gateway.wait_for(0, _pending(tool))
    decided = {a.id for a in payloads(events, "approval_changed") if a.decision}
    (approval,) = [
        a for a in payloads(events, "approval_changed") if a.tool == tool and a.id not in decided
    ]
    gateway.stub.DecideApproval(
        mind_pb2.DecideApprovalRequest(
            on_behalf_of=gateway.who("alice"),
            approval_id=approval.id,
            decision=common_pb2.APPROVAL_DECISION_APPROVE_ONCE,
        ),
        metadata=gateway.md,
        timeout=15,
    )


def _crash_and_reconnect(mind: MindProcess, gateway: Gateway) -> Gateway:
    gateway.close()
    mind.restart()
    return Gateway.connect(mind)


def _counts(mind: MindProcess) -> tuple[int, int]:
    engine = create_engine(mind.url)
    try:
        with engine.connect() as connection:
            widgets = connection.scalar(select(func.count()).select_from(models.Widget))
            records = connection.scalar(select(func.count()).select_from(models.WidgetRecord))
    finally:
        engine.dispose()
    return int(widgets or 0), int(records or 0)


@pytest.mark.pg_e2e
def test_a_mind_killed_between_create_and_send_loses_nothing_and_duplicates_nothing(
    mind: MindProcess, tmp_path: Path
) -> None:
    schema, page = tmp_path / "trip.json", tmp_path / "trip.html"
    schema.write_text(TRIP, encoding="utf-8")
    page.write_bytes(PAGE)
    Admin(mind.data_dir).run(
        "widget-types", "put", "trip", "--schema", str(schema), "--page", str(page)
    )
    gateway = Gateway.connect(mind)
    gateway.create(KEY)
    gateway.send(KEY, "plan a trip", "plan-1")
    gateway.wait_for(0, _pending("widget_create"))
    gateway = _crash_and_reconnect(mind, gateway)  # killed before the widget exists
    assert _counts(mind) == (0, 0)

    _approve_pending(gateway, "widget_create")
    _approve_pending(gateway, "widget_write")
    gateway.wait_for(0, _pending("widget_send"))
    gateway = _crash_and_reconnect(mind, gateway)  # killed between create and send
    assert _counts(mind) == (1, 1)

    _approve_pending(gateway, "widget_send")
    try:
        messages = _settled_history(gateway)
    finally:
        gateway.close()

    assert _counts(mind) == (1, 1)
    sent = [m for m in messages if m.posted_by == "widget"]
    assert [(m.widget.title, m.widget.summary) for m in sent] == [("Oslo", "Two days in Oslo")]
    calls = [c.id for m in messages for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if m.role == common_pb2.MESSAGE_ROLE_TOOL]
    assert len(calls) == 3 and sorted(results) == sorted(calls)
    assert not any(m.is_error for m in messages if m.role == common_pb2.MESSAGE_ROLE_TOOL)
    # The widget message follows the reply of the run that sent it.
    assistant = [m.text for m in messages if m.role == common_pb2.MESSAGE_ROLE_ASSISTANT]
    assert assistant[-2:] == ["Sent.", sent[0].text]


def _settled_history(gateway: Gateway) -> list[common_pb2.Message]:
    def replied(events: list[events_pb2.Event]) -> bool:
        appended = payloads(events, "message_appended")
        return any(m.text == "Sent." for m in appended) and any(
            m.posted_by == "widget" for m in appended
        )

    gateway.wait_for(0, replied)
    return list(gateway.history(KEY).messages)
