"""`/actions`, `/confirm`, `/decline` and `/amend` in `tobe chat`: the actions waiting for the
owner's confirmation in the current conversation.

`/actions` lists them; `/confirm ID` lets one run (or be scheduled), `/decline ID` cancels it
(`/cancel` already stops the running reply), `/amend ID TEXT` has it evaluated and planned
again with the change. Ids are given whole, as `/actions` and the status lines show them.
"""

from __future__ import annotations

import uuid

from rich.console import Console
from rich.text import Text

from face.chat.render import pending_action_line
from face.chat.session import ChatSession
from tobe.v1 import common_pb2, face_pb2, mind_pb2

DECISIONS = {
    "/confirm": common_pb2.ACTION_DECISION_CONFIRM,
    "/decline": common_pb2.ACTION_DECISION_CANCEL,
    "/amend": common_pb2.ACTION_DECISION_AMEND,
}


async def show(session: ChatSession, console: Console, key: str) -> None:
    reply = await session.call(
        face_pb2.MindCall(list_actions=mind_pb2.ListActionsRequest(conversation_key=key))
    )
    pending = reply.list_actions.pending
    for action in pending:
        console.print(Text(pending_action_line(action)))
    if not pending:
        console.print(Text("no action waits for your confirmation", style="dim"))


async def decide(session: ChatSession, console: Console, name: str, argument: str) -> None:
    """Confirm, decline or amend the action named first in `argument` (the rest: the change)."""
    action_id, _, amendment = argument.strip().partition(" ")
    reply = await session.call(
        face_pb2.MindCall(
            decide_action=mind_pb2.DecideActionRequest(
                action_id=action_id,
                decision=DECISIONS[name],
                amendment=amendment.strip(),
                idempotency_key=f"decide-{uuid.uuid4().hex}",
            )
        )
    )
    decided = reply.decide_action
    line = pending_action_line(decided.action)
    if decided.scheduled.id:
        line += f" → scheduled as {decided.scheduled.id}"
    console.print(Text(line, style="dim"))
