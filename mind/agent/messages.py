"""The messages API group: what enters a conversation, and reading what is in it.

A person's message (text, images or both), a client's post, a post by the Mind's own code,
an observation note from the Awareness sink and a scheduled action's firing all reach the
conversation's actor (`mind.agent.actor`), each with its source (`mind.conversation.sources`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from mind.actions import records as action_records
from mind.agent import proactive
from mind.agent.actor_state import ChatInput, SendResult
from mind.agent.actors import ConversationActors
from mind.conversation import queries
from mind.conversation.access import Viewer, check_principal
from mind.conversation.images import CheckedImage, ImageUpload, check_images
from mind.conversation.limits import check_idempotency_key, check_text, clamp
from mind.conversation.quotes import ForwardUpload, check_forwarded, check_reply_to
from mind.conversation.sources import ObservationSource
from mind.errors import InvalidInput
from mind.events.action_views import ScheduledActionView
from mind.scheduler.model import FiringDelivery
from mind.scheduler.records import list_schedules
from mind.tools.base import DetailMode


class Messages:
    def __init__(self, actors: ConversationActors) -> None:
        self._actors = actors
        self._database = actors.database
        self._settings = actors.settings

    async def send(
        self,
        viewer: Viewer,
        key: str,
        text: str,
        idempotency_key: str,
        steer: bool,
        mode: DetailMode,
        images: Sequence[ImageUpload] = (),
        reply_to: int = 0,
        forwarded: Sequence[ForwardUpload] = (),
    ) -> SendResult:
        """Accept a person's message: text, images, or both (see `mind.conversation.images`),
        quoting the message `reply_to` of the same conversation (0: none) and forwarding a chat
        record (`mind.conversation.quotes`)."""
        check_principal(viewer.principal)
        # Resizing an image over the limits takes a while: off the event loop.
        checked = await asyncio.to_thread(
            check_images,
            images,
            max_bytes=self._settings.max_image_bytes,
            max_count=self._settings.max_images,
        )
        record = await asyncio.to_thread(
            check_forwarded,
            forwarded,
            max_text_bytes=self._settings.max_message_bytes,
            max_image_bytes=self._settings.max_image_bytes,
            max_images=self._settings.max_images - len(checked),
        )
        check_text(
            text,
            "send",
            self._settings.max_message_bytes,
            images=len(checked) + len(record),
        )
        check_idempotency_key(idempotency_key, "send")
        chat = ChatInput(
            viewer.principal,
            text,
            idempotency_key,
            steer,
            mode.value,
            images=tuple(checked),
            reply_to=reply_to,
            forwarded=tuple(record),
        )
        async with self._actors.visible(viewer, key) as actor:
            # Checked once the conversation is known to be visible: a quote names its message.
            await self._database.read(lambda session: check_reply_to(session, key, reply_to))
            return await actor.submit(chat)

    async def post_as(
        self, viewer: Viewer, key: str, text: str, idempotency_key: str
    ) -> SendResult:
        """A client's post (Mind.PostMessage), posted by its principal; NotFound when it cannot
        see the conversation. The caller checks that it may post at all (scope `post`)."""
        check_principal(viewer.principal)
        check_text(text, "post", self._settings.max_message_bytes)
        check_idempotency_key(idempotency_key, "post")
        async with self._actors.visible(viewer, key) as actor:
            return await actor.post(text, idempotency_key, viewer.principal)

    async def post(
        self,
        key: str,
        text: str,
        idempotency_key: str,
        *,
        posted_by: str,
        widget: dict[str, Any] | None = None,
    ) -> SendResult:
        """Post an assistant message written by the Mind's own code (no viewer checks).

        It joins the conversation's queue (see `mind.agent.actor`): appended now when no run
        is active, else right after the active run's messages. Idempotent per key, in the key
        space of SendChat. NotFound for an unknown conversation, InvalidInput for bad text or
        key, ShuttingDown while stopping.
        """
        check_text(text, "post", self._settings.max_message_bytes)
        check_idempotency_key(idempotency_key, "post")
        if not posted_by:
            raise InvalidInput("posted_by is required: name who posts the message")
        await self._database.read(lambda session: queries.access(session, key))
        async with self._actors.holding(key) as actor:
            return await actor.post(text, idempotency_key, posted_by, widget)

    async def deliver_observation(
        self,
        key: str,
        text: str,
        idempotency_key: str,
        steer: bool,
        source: ObservationSource,
        *,
        images: Sequence[CheckedImage],
    ) -> SendResult:
        """Hand an observation note to a conversation (Awareness router; no viewer checks).

        Steering notes join the running run at its next step, or start one; others wait as a
        follow-up and start a run when the conversation is idle. Idempotent per key. `images`
        (checked by `mind.awareness.images`) are stored with the note, as a person's are.
        """
        chat = ChatInput(
            "awareness", text, idempotency_key, steer, "summary", source, tuple(images)
        )
        async with self._actors.holding(key) as actor:
            return await actor.submit(chat)

    async def deliver_firing(self, firing: FiringDelivery) -> None:
        """Queue a claimed firing's input in its conversation: its proactive run starts when
        the conversation is idle (`mind.agent.proactive`). Idempotent per firing (the input is
        keyed `firing:<id>`), so the scheduler may deliver again after a crash."""
        chat = ChatInput(
            principal=firing.owner,
            text=proactive.note_text(firing),
            idempotency_key=firing.idempotency_key,
            steer=False,
            mode=DetailMode.SUMMARY.value,
            source=proactive.source(firing),
        )
        async with self._actors.holding(firing.conversation_key) as actor:
            await actor.submit(chat)

    async def snapshot(
        self, viewer: Viewer, key: str, message_limit: int, mode: DetailMode
    ) -> queries.Snapshot:
        check_principal(viewer.principal)
        limit = clamp(message_limit, 50, 500)
        now = self._actors.clock.now()
        keyring = self._actors.keyring

        def read(session: Session) -> queries.Snapshot:
            found = queries.snapshot(
                session, viewer, key, limit, mode, keyring, schedules=_open_schedules
            )
            waiting = action_records.waiting(session, key, now)
            return dataclasses.replace(found, pending_actions=tuple(waiting))

        return await self._database.read(read)

    async def history(
        self, viewer: Viewer, key: str, after_message_id: int, limit: int, mode: DetailMode
    ) -> queries.HistoryPage:
        check_principal(viewer.principal)
        page_size = clamp(limit, 100, 1000)
        keyring = self._actors.keyring
        return await self._database.read(
            lambda session: queries.history(
                session, viewer, key, after_message_id, page_size, mode, keyring
            )
        )


def _open_schedules(session: Session, key: str) -> list[ScheduledActionView]:
    return list_schedules(session, key, include_ended=False)
