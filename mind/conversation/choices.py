"""Changes to a conversation's row: its profile and active Hand, its title, its archiving.

Each change is one unit of work: the `conversations` row and the durable
`conversation_changed` event (the conversation as it now is, for its owner and members).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from mind.conversation import queries
from mind.conversation.access import Viewer
from mind.errors import InvalidInput, NotAllowed
from mind.events.payloads import conversation_view
from mind.events.views import ConversationView
from mind.store import models
from mind.store.write_tx import WriteTx

CONVERSATION_CHANGED = "conversation_changed"
MAX_HAND_NAME = 128


def check_hand(hand: str) -> str:
    if len(hand) > MAX_HAND_NAME or any(c.isspace() for c in hand):
        raise InvalidInput(
            f"hand must be a Hand's name (at most {MAX_HAND_NAME} characters, no spaces) or "
            "empty for every Hand"
        )
    return hand


def owned(tx: WriteTx, viewer: Viewer, key: str) -> models.Conversation:
    """The conversation when `viewer` owns it; NotFound when hidden, NotAllowed for members."""
    conversation, _ = queries.visible(tx.session, viewer, key)
    if conversation.owner != viewer.principal:
        raise NotAllowed(f"only the owner of {key!r} ({conversation.owner}) may change it")
    return conversation


def change(
    tx: WriteTx, conversation: models.Conversation, apply: Callable[[models.Conversation], None]
) -> ConversationView:
    """Apply a change to the row and announce the conversation as it now is."""
    apply(conversation)
    tx.session.flush()
    members = queries.members_of(tx.session, conversation.key)
    view = conversation_view(conversation, members)
    event_id = tx.event(
        CONVERSATION_CHANGED, conversation.key, [conversation.owner, *members], view.to_payload()
    )
    return dataclasses.replace(view, last_event_id=event_id)
