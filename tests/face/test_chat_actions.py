"""`tobe chat` and the actions waiting for the owner: an `action_changed` event in one status
line naming the title, the id and what to type; what became of a decided one; `/confirm`,
`/decline` and `/amend` as Face commands."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from face.chat import actions
from face.chat.render import Renderer, pending_action_line
from tobe.v1 import common_pb2, events_pb2, face_pb2, mind_pb2


def _action(state: int, outcome: str = "") -> common_pb2.PendingAction:
    return common_pb2.PendingAction(id="act_1", title="Lights off", state=state, outcome=outcome)


def test_a_waiting_action_is_one_line_saying_how_to_decide_it() -> None:
    line = pending_action_line(_action(common_pb2.PENDING_ACTION_STATE_PENDING))
    assert line == (
        "⏳ waiting for your confirmation: Lights off [act_1] — /confirm, /decline or /amend"
    )


def test_a_decided_action_says_what_became_of_it() -> None:
    confirmed = _action(common_pb2.PENDING_ACTION_STATE_CONFIRMED, "run_9")
    assert pending_action_line(confirmed) == "✓ confirmed: Lights off [act_1] → run_9"
    expired = _action(common_pb2.PENDING_ACTION_STATE_EXPIRED)
    assert pending_action_line(expired) == "⌛ expired: Lights off [act_1]"


def test_the_renderer_prints_an_action_changed_event_as_its_status_line() -> None:
    out = io.StringIO()
    renderer = Renderer(Console(file=out, width=200))
    renderer.conversation = "p_x"
    cancelled = _action(common_pb2.PENDING_ACTION_STATE_CANCELLED)
    renderer.on_event(events_pb2.Event(conversation_key="p_x", action_changed=cancelled))
    assert out.getvalue() == "✗ declined: Lights off [act_1]\n"


class RecordingSession:
    def __init__(self) -> None:
        self.commands: list[face_pb2.MindCall] = []

    async def call(self, call: face_pb2.MindCall) -> face_pb2.MindReply:
        self.commands.append(call)
        decided = _action(common_pb2.PENDING_ACTION_STATE_AMENDED)
        return face_pb2.MindReply(decide_action=mind_pb2.DecideActionResponse(action=decided))


@pytest.mark.parametrize(
    ("typed", "decision", "amendment"),
    [
        ("/confirm act_1", common_pb2.ACTION_DECISION_CONFIRM, ""),
        ("/decline act_1", common_pb2.ACTION_DECISION_CANCEL, ""),
        ("/amend act_1 only the kitchen", common_pb2.ACTION_DECISION_AMEND, "only the kitchen"),
    ],
)
async def test_a_decision_command_names_the_action_the_decision_and_a_fresh_key(
    typed: str, decision: int, amendment: str
) -> None:
    session, out = RecordingSession(), io.StringIO()
    name, _, argument = typed.partition(" ")
    await actions.decide(session, Console(file=out, width=200), name, argument)  # type: ignore[arg-type]
    [frame] = session.commands
    sent = frame.decide_action
    assert (sent.action_id, sent.decision, sent.amendment) == ("act_1", decision, amendment)
    assert sent.idempotency_key.startswith("decide-")
    assert out.getvalue() == "✎ amended: Lights off [act_1]\n"
