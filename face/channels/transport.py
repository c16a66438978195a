"""What a channel's network side (Matrix, email) gives the bridge and takes from it.

A transport speaks one chat network as one account (the bot user, the agent's mailbox). It
knows nothing of ToBe: the bridge (`face.channels.bridge`) decides who may talk, which
conversation a thread is, and what to send. Everything a transport must keep across restarts
(a sync token, a mailbox position, an access token) it keeps in the `TransportState` it is
given, so that no inbound item is handled twice or missed.

Delivery is at least once and acknowledged: `inbound()` yields items in order; the bridge calls
`handled(item)` once the item is durably with the Mind (or refused for good), and only then may
the transport move its cursor past it. An item redelivered after a crash carries the same `id`,
which the bridge uses as the Mind's idempotency key, so it is never acted on twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Image:
    media_type: str  # image/png, image/jpeg, ...
    data: bytes
    name: str = ""


@dataclass(frozen=True)
class Inbound:
    """One thing a person did on the network: a message, or a reaction to one of ours."""

    # Stable across redelivery: the Matrix event id, the mail's Message-ID.
    id: str
    # The person's address on the network: `@alice:example.org`, `alice@example.org`.
    sender: str
    # Where the conversation lives: a room id, or the first Message-ID of a mail thread.
    thread: str
    text: str = ""
    images: tuple[Image, ...] = ()
    # The id of one of our sent messages this item answers: a reaction's target, the message a
    # reply quotes (Matrix `m.in_reply_to`, mail `In-Reply-To`); empty when none.
    reply_to: str = ""
    # For a reaction: its key (`✅`, `❌`, ...), and no text.
    reaction: str = ""
    # False for a group room or a mail with other people in copy: the bridge answers only in
    # direct conversations with one person.
    direct: bool = True
    # A short name for people (`Alice`), for pairing prompts and titles.
    display_name: str = ""


class TransportState(Protocol):
    """A transport's own durable values, kept in the channel's state database."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, value: str) -> None:
        """Committed before it returns."""
        ...


class Transport(Protocol):
    """One account on one network."""

    # The channel's name in the configuration and the state (`matrix`, `email`).
    name: str
    # Whether `edit` replaces a sent message in place (Matrix) or is not offered (email).
    edits: bool

    async def start(self) -> None:
        """Log in and get ready; raises `TransportError` with a line for people."""
        ...

    async def close(self) -> None: ...

    def inbound(self) -> AsyncIterator[Inbound]:
        """Items from people, oldest first, until closed; may raise `TransportError`."""
        ...

    async def handled(self, item: Inbound) -> None:
        """`item` is done with: the cursor may move past it (and every earlier item)."""
        ...

    async def send(
        self, thread: str, text: str, *, key: str, images: tuple[Image, ...] = ()
    ) -> str:
        """Send Markdown `text` (and images) to `thread`; returns the network's id of the sent
        message. `key` is the bridge's idempotency key: a send repeated with the same key after
        a crash must not show twice where the network allows it (a Matrix transaction id)."""
        ...

    async def edit(self, thread: str, message_id: str, text: str) -> None:
        """Replace the text of our message `message_id` (only when `edits`)."""
        ...

    async def typing(self, thread: str, active: bool) -> None:
        """Show (or stop showing) that a reply is being written, where the network can."""
        ...


class TransportError(Exception):
    """The network cannot be used: the message says why and what to do, for people."""
