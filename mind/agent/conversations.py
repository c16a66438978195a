"""The conversations API group: create, list, search, rename and archive conversations, and
the owner's choices.

The owner chooses the profile and the active Hand; each change commits first and is then
handed to the conversation's loaded actor (`ConversationActors.changed`). A new title or an
archiving commits with its `conversation_changed` event, so every client updates its list.
"""

from __future__ import annotations

import builtins
import dataclasses
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from mind.agent.actors import ConversationActors
from mind.conversation import branches, choices, kinds, posts, queries
from mind.conversation.access import Viewer, check_key, check_principal
from mind.conversation.limits import MAX_TITLE, checked_title, clamp
from mind.errors import AlreadyExists, InvalidInput, NotFound
from mind.events.payloads import conversation_view
from mind.events.views import ConversationView
from mind.profiles.book import ProfileSummary
from mind.profiles.errors import ProfileError
from mind.recall import conversations as recall
from mind.recall.query import parse
from mind.recall.semantic import Semantic
from mind.store import models
from mind.store.write_tx import WriteTx


def _key_taken(session: Session, viewer: Viewer, key: str) -> AlreadyExists | NotFound:
    """The refusal for creating an existing key: AlreadyExists for those who can see it.

    Anyone else gets the NotFound a snapshot answers, so creating cannot probe which keys
    exist.
    """
    try:
        queries.visible(session, viewer, key)
    except NotFound as hidden:
        return hidden
    return AlreadyExists(f"conversation {key!r} already exists")


class Conversations:
    def __init__(self, actors: ConversationActors) -> None:
        self._actors = actors
        self._database = actors.database
        # Semantic recall for `search`, when configured (`mind.recall.semantic`).
        self.semantic: Semantic | None = None

    async def create(
        self,
        viewer: Viewer,
        key: str,
        title: str,
        members: list[str],
        profile: str = "",
        kind: str = kinds.CHAT,
    ) -> ConversationView:
        """`kind`: "chat" for what a person creates; the Awareness sink passes "awareness"."""
        check_principal(viewer.principal)
        kinds.checked([kind])
        profile = self._known_profile(profile)
        key = key or f"p_{secrets.token_hex(8)}"
        check_key(key)
        settings = self._actors.settings
        if members and not key.startswith("g_"):
            raise InvalidInput("members are only allowed in group conversations ('g_' keys)")
        if len(members) > settings.max_members:
            raise InvalidInput(
                f"members lists {len(members)} principals; the maximum is "
                f"{settings.max_members} (setting mind.max_members)"
            )
        for member in members:
            check_principal(member, "members")
        if len(title) > MAX_TITLE:
            raise InvalidInput(f"title is {len(title)} characters; the maximum is {MAX_TITLE}")
        members = sorted(set(members) - {viewer.principal})
        declared = self._actors.profiles.declared(profile)
        # The profile's own welcome, else the Mind-wide one.
        welcome = (declared.welcome if declared else "") or self._actors.replies.welcome(key)

        def unit(tx: WriteTx) -> ConversationView:
            if tx.session.get(models.Conversation, key) is not None:
                raise _key_taken(tx.session, viewer, key)
            row = models.Conversation(
                key=key,
                owner=viewer.principal,
                title=title,
                created_at=datetime.now(UTC),
                profile=profile,
                kind=kind,
            )
            tx.session.add(row)
            tx.session.add_all(
                models.ConversationMember(conversation_key=key, principal=m) for m in members
            )
            tx.session.flush()
            view = conversation_view(row, members)
            audience = [viewer.principal, *members]
            event_id = tx.event("conversation_created", key, audience, view.to_payload())
            if welcome:
                posts.append(tx, audience, key=key, text=welcome, posted_by=posts.WELCOME)
            return dataclasses.replace(view, last_event_id=event_id)

        # Its creator owns it first (a key the caller named was taken on the way in).
        await self._actors.leases.acquire(key)
        try:
            view = await self._database.write(unit)
        except IntegrityError as exc:
            raise await self._database.read(
                lambda session: _key_taken(session, viewer, key)
            ) from exc
        return view

    async def branch(
        self, viewer: Viewer, origin_key: str, message_id: int, key: str = "", title: str = ""
    ) -> tuple[ConversationView, int]:
        """Branch `origin_key` at `message_id` into a new conversation of the viewer's
        (`mind.conversation.branches`); the view and how many messages it holds. Anyone who
        may read the conversation may branch it."""
        check_principal(viewer.principal)
        check_key(origin_key)
        if message_id <= 0:
            raise InvalidInput("message_id is required: the id of the last message to keep")
        key = key or f"p_{secrets.token_hex(8)}"
        check_key(key)
        title = checked_title(title) if title else ""

        def unit(tx: WriteTx) -> tuple[ConversationView, int]:
            if tx.session.get(models.Conversation, key) is not None:
                raise _key_taken(tx.session, viewer, key)
            made = branches.branch(tx, viewer, origin_key, message_id, key, title)
            view = conversation_view(made.conversation, [])
            event_id = tx.event("conversation_created", key, [viewer.principal], view.to_payload())
            return dataclasses.replace(view, last_event_id=event_id), made.messages_copied

        await self._actors.leases.acquire(key)
        try:
            return await self._database.write(unit)
        except IntegrityError as exc:
            raise await self._database.read(
                lambda session: _key_taken(session, viewer, key)
            ) from exc

    async def list(
        self,
        viewer: Viewer,
        limit: int,
        only: Sequence[str] = (),
        include_archived: bool = False,
    ) -> list[ConversationView]:
        """Newest first; `only`: these kinds (`mind.conversation.kinds`), empty for every kind;
        archived ones only with `include_archived`."""
        check_principal(viewer.principal)
        wanted = kinds.checked(only)
        limit = clamp(limit, 100, 1000)
        return await self._database.read(
            lambda session: queries.list_visible(session, viewer, limit, wanted, include_archived)
        )

    async def search(self, viewer: Viewer, query: str, limit: int) -> builtins.list[recall.Match]:
        """The viewer's conversations whose title or recall entries match `query`
        (`mind.recall.conversations`)."""
        check_principal(viewer.principal)
        parsed = parse(query)
        limit = clamp(limit, recall.MAX_MATCHES, recall.MAX_MATCHES)
        probe = await self.semantic.probe(query) if self.semantic else None
        return await self._database.read(
            lambda session: recall.matching(session, viewer, parsed, limit, probe)
        )

    async def rename(self, viewer: Viewer, key: str, title: str) -> ConversationView:
        """Owner and members (who may write to it) rename it; NotFound when hidden."""
        check_principal(viewer.principal)
        title = checked_title(title)

        def unit(tx: WriteTx) -> ConversationView:
            row, _ = queries.visible(tx.session, viewer, key)
            return choices.change(tx, row, lambda r: setattr(r, "title", title))

        return await self._database.write(unit)

    async def set_archived(self, viewer: Viewer, key: str, archived: bool) -> ConversationView:
        """The owner archives it or brings it back (NotAllowed for members: it leaves or
        rejoins every member's list)."""
        check_principal(viewer.principal)

        def unit(tx: WriteTx) -> ConversationView:
            row = choices.owned(tx, viewer, key)
            return choices.change(tx, row, lambda r: setattr(r, "archived", archived))

        return await self._database.write(unit)

    # `builtins.list`: in this class `list` names the method above.
    def list_profiles(self) -> builtins.list[ProfileSummary]:
        return self._actors.profiles.summaries()

    async def set_profile(self, viewer: Viewer, key: str, profile: str) -> ConversationView:
        """The owner sets the profile the conversation's next run uses (InvalidInput when it
        is unknown or known to be bad, NotAllowed for members, NotFound when hidden)."""
        check_principal(viewer.principal)
        name = self._known_profile(profile)

        def unit(tx: WriteTx) -> ConversationView:
            row = choices.owned(tx, viewer, key)
            return choices.change(tx, row, lambda r: setattr(r, "profile", name))

        return await self._actors.changed(key, await self._database.write(unit))

    async def set_profile_for_operator(self, key: str, profile: str) -> ConversationView:
        """The same for `tobe admin` (no owner check); NotFound for an unknown key."""
        name = self._known_profile(profile)

        def unit(tx: WriteTx) -> ConversationView:
            row = tx.session.get(models.Conversation, key)
            if row is None:
                raise NotFound(f"no conversation {key!r}")
            return choices.change(tx, row, lambda r: setattr(r, "profile", name))

        return await self._actors.changed(key, await self._database.write(unit))

    async def set_active_hand(self, viewer: Viewer, key: str, hand: str) -> ConversationView:
        """The owner chooses the Hand whose tools the model sees ("" = every Hand)."""
        check_principal(viewer.principal)
        hand = choices.check_hand(hand)

        def unit(tx: WriteTx) -> ConversationView:
            row = choices.owned(tx, viewer, key)
            return choices.change(tx, row, lambda r: setattr(r, "active_hand", hand))

        return await self._actors.changed(key, await self._database.write(unit))

    def _known_profile(self, profile: str) -> str:
        try:
            return self._actors.profiles.check(profile)
        except ProfileError as exc:
            raise InvalidInput(str(exc)) from exc
