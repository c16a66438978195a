"""What made a conversation (`Conversation.kind`, column `conversations.kind`).

A person's own conversations are "chat"; the ones the Mind makes to receive Awareness
observations (`mind.awareness_conversation` and each source's `p_aw-…`) are "awareness".
Clients open a person's chats first, so the kinds are listed here once and checked on the way in.
"""

from __future__ import annotations

from collections.abc import Iterable

from mind.errors import InvalidInput

CHAT = "chat"
AWARENESS = "awareness"
KINDS = (CHAT, AWARENESS)


def checked(kinds: Iterable[str]) -> tuple[str, ...]:
    """The kinds without repeats; InvalidInput naming the allowed ones for any other value."""
    wanted = tuple(dict.fromkeys(kinds))
    unknown = [kind for kind in wanted if kind not in KINDS]
    if unknown:
        raise InvalidInput(
            f"unknown conversation kind {', '.join(repr(k) for k in unknown)}; "
            f"the kinds are {', '.join(KINDS)}"
        )
    return wanted
