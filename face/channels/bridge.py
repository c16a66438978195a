"""One channel at work: what people do on the network becomes turns of their conversations.

Each item from the transport is decided in order and acknowledged (`handled`) only once it is
with the Mind or was refused for good, so a crash redelivers it and the Mind's idempotency key
(the item's id) keeps it from counting twice. Who may talk:

* a paired person talks through their own Face connection (`PersonLink`);
* anyone else gets a pairing code, once per code, if `unknown_senders = "pair"` or their address
  is in `allow`, and nothing at all otherwise; the owner approves the code with
  `tobe admin channels approve`, and the channel tells the person when it sees the approval;
* only direct conversations are answered: a room or mail with more people is left alone.

A reaction (✅/❌) to an approval request, or a message whose first word approves or denies
(`!approve`/`!deny` on Matrix, `approve_words`/`deny_words` by mail), decides that approval: the
one the message replies to, else the only one waiting in the conversation.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import deque
from datetime import UTC, datetime

from face.channels.person import FaceTarget as FaceTarget
from face.channels.person import PersonLink
from face.channels.state import ChannelState, Sender
from face.channels.telling import (
    APPROVE_REACTIONS,
    DENY_REACTIONS,
    decision_words,
    paired_line,
    pairing_prompt,
    refused_line,
    revoked_line,
    slow_down_line,
)
from face.channels.transport import Inbound, Transport
from face.chat.session import CommandFailed, FatalSessionError
from tobe.config import ChannelSettings, EmailChannelSettings
from tobe.v1 import common_pb2, mind_pb2

log = logging.getLogger(__name__)

# Seconds between two looks for pairings the owner approved.
ANNOUNCE_INTERVAL = 1.0
_WINDOW = 60.0


async def run_channel(
    transport: Transport, settings: ChannelSettings, state: ChannelState, face: FaceTarget
) -> None:
    """Runs one channel until cancelled; raises TransportError when the network fails."""
    await Bridge(transport, settings, state, face).run()


class RateLimit:
    """At most `per_minute` items per sender in any 60 s; the first refusal of a burst is
    told, the rest are dropped silently."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = {}
        self._told: dict[str, float] = {}

    def admit(self, sender: str, now: float) -> bool:
        seen = self._seen.setdefault(sender, deque())
        while seen and seen[0] <= now - _WINDOW:
            seen.popleft()
        if len(seen) < self.per_minute:
            seen.append(now)
            return True
        return False

    def tell(self, sender: str, now: float) -> bool:
        """Whether this refusal is the first of its burst (so the person is told once)."""
        if now - self._told.get(sender, -_WINDOW) < _WINDOW:
            return False
        self._told[sender] = now
        return True


class Bridge:
    def __init__(
        self,
        transport: Transport,
        settings: ChannelSettings,
        state: ChannelState,
        face: FaceTarget,
    ) -> None:
        self._transport = transport
        self._settings = settings
        self._state = state
        self._face = face
        self._channel = transport.name
        self._people: dict[str, PersonLink] = {}
        self._limit = RateLimit(settings.messages_per_minute)

    async def run(self) -> None:
        await self._transport.start()
        try:
            for sender in self._state.senders(self._channel):
                await self._link(sender)
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._announce())
                tasks.create_task(self._inbound())
        finally:
            for link in list(self._people.values()):
                await link.close()
            await self._transport.close()

    async def _link(self, sender: Sender) -> PersonLink:
        link = self._people.get(sender.address)
        if link is not None and link.sender.credential_id == sender.credential_id:
            return link
        if link is not None:
            await link.close()
        link = PersonLink(
            sender, self._transport, self._settings, self._state, self._face, self._revoked
        )
        self._people[sender.address] = link
        await link.start()
        return link

    async def _revoked(self, sender: Sender) -> None:
        current = self._state.sender(self._channel, sender.address)
        if current is not None and current.credential_id != sender.credential_id:
            return
        self._state.forget_sender(self._channel, sender.address)
        link = self._people.pop(sender.address, None)
        if link is not None:
            asyncio.get_running_loop().create_task(link.close())
        threads = self._state.threads_of(self._channel, sender.address).values()
        for thread in threads:
            key = f"revoked:{sender.credential_id}:{thread}"
            if self._state.sent(self._channel, key) is None:
                sent = await self._transport.send(thread, revoked_line(), key=key)
                self._state.record_sent(self._channel, key, sent)

    async def _announce(self) -> None:
        while True:
            for pairing in self._state.unannounced(self._channel):
                sender = self._state.sender(self._channel, pairing.address)
                if sender is not None:
                    link = await self._link(sender)
                    await link.conversation(
                        pairing.thread, self._title(pairing.display_name, pairing.address)
                    )
                    key = f"paired:{pairing.code}"
                    if self._state.sent(self._channel, key) is None:
                        sent = await self._transport.send(
                            pairing.thread, paired_line(sender.principal), key=key
                        )
                        self._state.record_sent(self._channel, key, sent)
                self._state.announced(pairing.code)
            await asyncio.sleep(ANNOUNCE_INTERVAL)

    async def _inbound(self) -> None:
        async for item in self._transport.inbound():
            try:
                await self._take(item)
            except FatalSessionError:
                # The person's credential was revoked: `_revoked` tells them; the item is done.
                pass
            except CommandFailed as exc:
                await self._tell_once(item, refused_line(exc.message))
            await self._transport.handled(item)

    async def _take(self, item: Inbound) -> None:
        if not item.direct:
            log.info(
                "%s: %s wrote in a shared room or thread; not answered", self._channel, item.sender
            )
            return
        now = time.monotonic()
        if not self._limit.admit(item.sender, now):
            if self._limit.tell(item.sender, now):
                await self._tell_once(item, slow_down_line(self._limit.per_minute))
            return
        sender = self._state.sender(self._channel, item.sender)
        if sender is None:
            await self._unknown(item)
            return
        link = await self._link(sender)
        if item.reaction:
            approval_id = self._state.approval_asked_by(self._channel, item.reply_to)
            if approval_id is not None and item.reaction in APPROVE_REACTIONS | DENY_REACTIONS:
                await link.decide(approval_id, item.reaction in APPROVE_REACTIONS)
            return
        title = self._title(item.display_name, item.sender)
        key = await link.conversation(item.thread, title)
        if await self._decided(item, link, key):
            return
        request = mind_pb2.SendChatRequest(
            conversation_key=key,
            text=item.text,
            images=[
                common_pb2.ImageUpload(media_type=image.media_type, data=image.data)
                for image in item.images
            ],
            idempotency_key=f"{self._channel}-{hashlib.sha256(item.id.encode()).hexdigest()[:40]}",
        )
        if not request.text.strip() and not request.images:
            return
        await link.send_chat(key, item.thread, title, request)

    async def _decided(self, item: Inbound, link: PersonLink, key: str) -> bool:
        """Whether the item decided an approval (or was told which one to decide)."""
        approve, deny = decision_words(self._settings)
        words = item.text.split()
        # "Approve." and "yes!" count; "!approve" keeps its leading mark.
        first = words[0].casefold().rstrip(".,:;!") if words else ""
        if first not in approve | deny:
            return False
        target = (
            self._state.approval_asked_by(self._channel, item.reply_to) if item.reply_to else None
        )
        waiting = link.waiting.get(key, [])
        if target is None and len(waiting) == 1:
            target = waiting[0]
        if target is None:
            if len(waiting) > 1:
                await self._tell_once(
                    item,
                    f"{len(waiting)} approvals are waiting: reply to the request you mean.",
                )
                return True
            return False
        await link.decide(target, first in approve)
        return True

    async def _unknown(self, item: Inbound) -> None:
        if item.reaction:
            return
        if not self._may_pair(item.sender):
            log.info("%s: a message from an unknown sender was ignored", self._channel)
            return
        now = datetime.now(UTC)
        pairing, new = self._state.open_pairing(
            self._channel, item.sender, item.thread, item.display_name, now
        )
        if new:
            key = f"pair:{pairing.code}"
            sent = await self._transport.send(item.thread, pairing_prompt(pairing, now), key=key)
            self._state.record_sent(self._channel, key, sent)
            log.info(
                "%s: pairing code %s given to %s; approve it with `tobe admin channels approve %s`",
                self._channel,
                pairing.code,
                item.sender,
                pairing.code,
            )

    def _may_pair(self, address: str) -> bool:
        if self._settings.unknown_senders == "pair":
            return True
        wanted = address.casefold()
        for entry in self._settings.allow:
            allowed = entry.strip().casefold()
            if allowed == wanted:
                return True
            mail_domain = isinstance(self._settings, EmailChannelSettings) and allowed.startswith(
                "@"
            )
            if mail_domain and wanted.endswith(allowed):
                return True
        return False

    async def _tell_once(self, item: Inbound, text: str) -> None:
        key = f"told:{hashlib.sha256(item.id.encode()).hexdigest()[:40]}"
        if self._state.sent(self._channel, key) is None:
            sent = await self._transport.send(item.thread, text, key=key)
            self._state.record_sent(self._channel, key, sent)

    def _title(self, display_name: str, address: str) -> str:
        return f"{display_name or address} on {self._channel.capitalize()}"
