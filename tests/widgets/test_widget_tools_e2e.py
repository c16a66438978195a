"""The widget tools through a running Mind with the Scripted provider: absent until the
operator puts a type with `tobe admin widget-types put` (over the Mind's socket); then the model
creates a widget, writes records (one refused by the schema, one for a stale revision, each
answered with the generic failure), and sends it: the widget message follows the run's reply
in history, carries the card, and later requests show it to the model, their last note
naming the conversation's widgets."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.admin_cli import Admin
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, running_mind
from trip_type import PAGE, TRIP

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e
TOOLS = ["widget_create", "widget_write", "widget_read", "widget_delete", "widget_send"]
INVALID = "request failed (400); read the current state before trying again"
STALE = "request failed (409); read the current state before trying again"


def _call(name: str, **arguments: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _on_widget(name: str, **arguments: object) -> dict[str, Any]:
    """A call on the widget whose id the last tool result names."""
    return {**_call(name, **arguments), "arguments_from_last": {"widget_id": "widget_id"}}


def _after(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"last_role": "tool", "last_is_error": error, "last_contains": text}


RUNS = [
    {
        "match": "^before",
        "steps": [
            {
                "expect": {"tools_exclude": TOOLS, "request_excludes": ["Widgets in this"]},
                "text": "no widgets",
            }
        ],
    },
    {
        "match": "^plan",
        "steps": [
            {
                "expect": {"tools_include": TOOLS},
                "tool_calls": [_call("widget_create", type="trip", title="Rome in May")],
            },
            {
                "expect": _after('"type":"trip","title":"Rome in May"'),
                "tool_calls": [
                    _on_widget(
                        "widget_write",
                        module="stops",
                        record_id="r1",
                        data={"place": "Rome", "nights": 3},
                        expected_revision=0,
                    )
                ],
            },
            {
                "expect": _after('"record_id":"r1"'),
                "tool_calls": [
                    # The schema wants a string place; then a write expecting a new record.
                    _on_widget("widget_write", module="stops", record_id="r2", data={"place": 7}),
                    _on_widget(
                        "widget_write",
                        module="stops",
                        record_id="r1",
                        data={"place": "Milan"},
                        expected_revision=0,
                    ),
                    _on_widget("widget_read"),
                ],
            },
            {
                "expect": _after('"data":{"place":"Rome","nights":3},"revision":1'),
                "tool_calls": [_on_widget("widget_send", summary="Three nights in Rome")],
            },
            {"expect": _after('"sent":'), "text": "Here is your trip."},
        ],
    },
    {
        "match": "^again",
        "steps": [
            {
                "expect": {
                    "request_contains": [
                        "Three nights in Rome",
                        # The run's last note names the widget, its revision and records.
                        "Widgets in this conversation (1; read one before changing it):",
                        "trip 'Rome in May', revision 3 (stops 1)",
                    ]
                },
                "text": "ok",
            }
        ],
    },
]


@pytest.fixture(scope="module")
def mind() -> Iterator[MindProcess]:
    # Short, so the Management socket's path stays below the Unix limit.
    root = Path(tempfile.mkdtemp(prefix="twtl-"))
    script = root / "script.yaml"
    script.write_text(json.dumps({"runs": RUNS}), encoding="utf-8")  # JSON is YAML
    try:
        with running_mind(root, script=script, TOBE_APPROVALS__WORKSPACE_WRITE="allow") as mind:
            yield mind
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _chat(gateway: Gateway, key: str, text: str) -> None:
    after = gateway.head()
    sent = gateway.send(key, text, f"{key}-{text}")
    events = gateway.wait_runs_ended(after, {sent.run_id})
    (ended,) = [r for r in payloads(events, "run_changed") if r.id == sent.run_id][-1:]
    assert (ended.state, ended.reason) == (common_pb2.RUN_STATE_COMPLETED, ""), ended.reason


def test_the_model_builds_and_sends_a_widget_of_a_type_put_while_the_mind_runs(
    mind: MindProcess, tmp_path: Path
) -> None:
    gateway = Gateway.connect(mind)
    try:
        key = gateway.create("p_widgets")
        _chat(gateway, key, "before any type")
        schema, page = tmp_path / "trip.json", tmp_path / "trip.html"
        schema.write_text(TRIP, encoding="utf-8")
        page.write_bytes(PAGE)
        Admin(mind.data_dir).run(
            "widget-types", "put", "trip", "--schema", str(schema), "--page", str(page)
        )

        _chat(gateway, key, "plan my trip")
        _chat(gateway, key, "again")

        messages = list(gateway.history(key).messages)
    finally:
        gateway.close()
    errors = [m.text for m in messages if m.role == common_pb2.MESSAGE_ROLE_TOOL and m.is_error]
    assert errors == [f"error: {INVALID}", f"error: {STALE}"]
    assistant = [m for m in messages if m.role == common_pb2.MESSAGE_ROLE_ASSISTANT]
    texts = [m.text for m in assistant if not m.tool_calls]
    sent = next(m for m in assistant if m.posted_by == "widget")
    assert texts[-3:] == ["Here is your trip.", sent.text, "ok"]
    card = sent.widget
    assert (card.type, card.title, card.summary, card.cover) == (
        "trip",
        "Rome in May",
        "Three nights in Rome",
        "",
    )
    assert card.id.startswith("w_") and card.revision == 3
