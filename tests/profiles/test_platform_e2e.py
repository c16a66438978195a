"""Profile code using the platform in a running Mind (Scripted model): a factory's tool creates,
fills and sends a widget and sends a text message; both land after the run's reply, in order;
a CancelRun fires the signal the factory was given, and a `with_signal` client then refuses."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.admin_cli import Admin
from helpers.eventually import eventually
from helpers.mind_gateway import Gateway, payloads
from helpers.mind_process import MindProcess, running_mind

from tests.profiles.platform_factory import GOOD_TRIP, PROBE
from tests.widgets.trip_type import PAGE, TRIP
from tobe.v1 import common_pb2, mind_pb2

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CONFIG = """
[profiles]
factory = "tests.profiles.platform_factory:factory"

[[profiles.profile]]
name = "planner"
platform_tools = []
"""
RUNS: list[dict[str, Any]] = [
    {
        "match": "^plan",
        "steps": [
            {"tool_calls": [{"name": "plan_trip", "arguments": {}}]},
            {
                "expect": {"last_role": "tool", "last_is_error": False, "last_contains": "planned"},
                "text": "Your trip is planned.",
            },
        ],
    },
    {"match": "^wait", "steps": [{"tool_calls": [{"name": "await_cancel", "arguments": {}}]}]},
]


@pytest.fixture(scope="module")
def mind() -> Iterator[MindProcess]:
    # Short, so the Management socket's path stays below the Unix limit.
    root = Path(tempfile.mkdtemp(prefix="tpfe-"))
    script, config = root / "script.yaml", root / "config.toml"
    script.write_text(json.dumps({"runs": RUNS}), encoding="utf-8")  # JSON is YAML
    config.write_text(CONFIG, encoding="utf-8")
    schema, page = root / "trip.json", root / "trip.html"
    schema.write_text(TRIP, encoding="utf-8")
    page.write_bytes(PAGE)
    try:
        with running_mind(
            root,
            script=script,
            TOBE_CONFIG=str(config),
            PYTHONPATH=str(ROOT),
            TOBE_APPROVALS__WORKSPACE_WRITE="allow",
            **{PROBE: str(root / "probe.txt")},
        ) as mind:
            Admin(mind.data_dir).run(
                "widget-types", "put", "trip", "--schema", str(schema), "--page", str(page)
            )
            yield mind
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    gateway = Gateway.connect(mind)
    try:
        yield gateway
    finally:
        gateway.close()


def _create(gateway: Gateway, key: str) -> None:
    request = mind_pb2.CreateConversationRequest(
        on_behalf_of=gateway.who("alice"), key=key, profile="planner"
    )
    gateway.stub.CreateConversation(request, metadata=gateway.md, timeout=10)


def test_a_profile_tools_widget_and_message_follow_the_runs_reply_in_order(
    gateway: Gateway,
) -> None:
    _create(gateway, "p_plan")
    after = gateway.head()
    sent = gateway.send("p_plan", "plan my trip", "plan-1")
    events = gateway.wait_runs_ended(after, {sent.run_id})
    (ended,) = [r for r in payloads(events, "run_changed") if r.id == sent.run_id][-1:]
    assert ended.state == common_pb2.RUN_STATE_COMPLETED, ended.reason

    def stored() -> list[common_pb2.Message]:
        return list(gateway.history("p_plan").messages)

    found = eventually(
        stored, what="the posts after the reply", until=lambda m: m[-1].posted_by == "profile"
    )
    user, calls, result, reply, card, text = found
    assert (user.text, calls.tool_calls[0].name, result.text[:8]) == (
        "plan my trip",
        "plan_trip",
        "planned ",
    )
    assert (reply.text, reply.posted_by) == ("Your trip is planned.", "")
    assert card.posted_by == "widget" and text.posted_by == "profile"
    assert (card.widget.type, card.widget.title, card.widget.summary) == (
        "trip",
        "Rome in May",
        "Three nights in Rome",
    )
    assert text.text == GOOD_TRIP
    assert reply.id < card.id < text.id


def test_cancelling_the_run_fires_the_signal_and_a_with_signal_client_then_refuses(
    gateway: Gateway, mind: MindProcess
) -> None:
    probe = mind.data_dir.parent / "probe.txt"
    _create(gateway, "p_wait")
    gateway.send("p_wait", "wait for me", "wait-1")
    eventually(lambda: probe.exists() and probe.read_text(), what="the tool waiting", until=bool)

    request = mind_pb2.CancelRunRequest(
        on_behalf_of=gateway.who("alice"), conversation_key="p_wait"
    )
    gateway.stub.CancelRun(request, metadata=gateway.md, timeout=10)

    found = eventually(
        probe.read_text, what="the refusal after the cancel", until=lambda t: t != "waiting"
    )
    assert found == "cancelled CANCELLED"
