"""The widget tools through a running Mind with the Scripted provider: absent until the
operator puts a type with `tobe admin widget-types put` (over the Mind's socket), then offered,
creating a widget in the conversation and answering a refusal with the generic failure."""

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
TOOLS = ["widget_create", "widget_write", "widget_read", "widget_delete"]
MISSING = "request failed (404); read the current state before trying again"


def _call(name: str, **arguments: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


RUNS = [
    {"match": "^before", "steps": [{"expect": {"tools_exclude": TOOLS}, "text": "no widgets"}]},
    {
        "match": "^plan",
        "steps": [
            {
                "expect": {"tools_include": TOOLS},
                "tool_calls": [_call("widget_create", type="trip", title="Rome in May")],
            },
            {
                "expect": {
                    "last_role": "tool",
                    "last_is_error": False,
                    "last_contains": '"type":"trip","title":"Rome in May"',
                },
                "tool_calls": [
                    _call(
                        "widget_write",
                        widget_id="w_missing",
                        module="stops",
                        record_id="r1",
                        data={"place": "Rome"},
                    )
                ],
            },
            {
                "expect": {"last_role": "tool", "last_is_error": True, "last_contains": MISSING},
                "text": "planned",
            },
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


def test_a_type_put_while_the_mind_runs_brings_the_tools_to_the_model(
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

        tool_results = [
            (m.text, m.is_error)
            for m in gateway.history(key).messages
            if m.role == common_pb2.MESSAGE_ROLE_TOOL
        ]
    finally:
        gateway.close()
    assert len(tool_results) == 2
    assert '"title":"Rome in May"' in tool_results[0][0]
    assert tool_results[1] == (f"error: {MISSING}", True)
