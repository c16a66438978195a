"""The conversation manager: the entry point for every conversation operation.

It checks input and visibility, keeps one actor per conversation (created on first use and
restored after a restart), and owns crash recovery and graceful shutdown. The owner's choices
(profile, active Hand) are written here and handed to the loaded actor, which keeps them.
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import logging
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from mind.actions import records as action_records
from mind.actions.layer import DecisionLayer
from mind.actions.model import PendingChoice
from mind.conversation import (
    action_decisions,
    choices,
    inputs,
    kinds,
    posts,
    proactive,
    queries,
    runs,
)
from mind.conversation.access import Viewer, can_see, check_key, check_principal
from mind.conversation.action_decisions import DecideResult, Route
from mind.conversation.actor import (
    ChatInput,
    ConversationActor,
    ConversationSettings,
    SendResult,
)
from mind.conversation.continuation import open_call_ids
from mind.conversation.errors import ShuttingDown
from mind.conversation.images import CheckedImage, ImageUpload, check_images
from mind.conversation.replies import ConfiguredReplies, ReplyTexts
from mind.core.loop import AgentCore
from mind.errors import AlreadyExists, InvalidInput, NotAllowed, NotFound, WrongState
from mind.events.action_views import PendingActionView, PendingState, ScheduledActionView
from mind.events.bus import EventBus
from mind.events.payloads import conversation_view
from mind.events.views import CompactionView, ConversationView
from mind.memory.store import Memory, MemoryListing, listing
from mind.profiles.book import ProfileBook, ProfileSummary
from mind.profiles.errors import ProfileError
from mind.scheduler import records as schedules
from mind.scheduler.clock import SystemClock
from mind.scheduler.model import Clock, FiringDelivery
from mind.sealing.keyring import KeyRing, Queried
from mind.sealing.turns import store_loader
from mind.store import models
from mind.store.database import Database
from mind.store.outbox import prune
from mind.store.write_tx import WriteTx
from mind.tools.base import DetailMode
from tobe.config import MindSettings, ProfilesSettings

log = logging.getLogger(__name__)

MAX_IDEMPOTENCY_KEY = 128
MAX_TITLE = 256
INTERRUPTED = "interrupted: the Mind stopped while the run was active"


def _loaded(session: Session, key: str) -> tuple[list[str], ConversationSettings]:
    """Owner and members of a conversation (the members alone when it is gone), and what it
    runs with."""
    conversation = session.get(models.Conversation, key)
    if conversation is None:
        return queries.members_of(session, key), ConversationSettings()
    settings = ConversationSettings(
        conversation.owner, conversation.profile, conversation.active_hand
    )
    return [conversation.owner, *queries.members_of(session, key)], settings


def _action_access(session: Session, action_id: str) -> tuple[PendingActionView, str, list[str]]:
    """A pending action with its conversation's owner and members; NotFound when unknown."""
    action = action_records.view_of(action_records.find(session, action_id))
    owner, members = queries.access(session, action.conversation_key)
    return action, owner, members


def _clamp(value: int, default: int, maximum: int) -> int:
    if value < 0:
        raise InvalidInput(f"a limit cannot be negative (got {value})")
    return min(value or default, maximum)


def _check_text(text: str, what: str, max_bytes: int, *, images: int | None = None) -> None:
    """Text within the size limit, not empty unless images carry the message (`images` is
    None where a message cannot carry any)."""
    if not text.strip() and not images:
        carriers = "some content" if images is None else "some content or an image"
        raise InvalidInput(f"text is empty: {what} a message with {carriers}")
    size = len(text.encode())
    if size > max_bytes:
        raise InvalidInput(f"text is {size} bytes; the maximum is {max_bytes} bytes")


def _check_idempotency_key(idempotency_key: str, what: str) -> None:
    if not idempotency_key or len(idempotency_key) > MAX_IDEMPOTENCY_KEY:
        raise InvalidInput(
            f"idempotency_key is required (1 to {MAX_IDEMPOTENCY_KEY} characters); reuse "
            f"the same key when retrying a {what}"
        )


class ConversationManager:
    def __init__(
        self,
        database: Database,
        core: AgentCore,
        settings: MindSettings,
        *,
        bus: EventBus,
        replies: ReplyTexts | None = None,
        profiles: ProfileBook | None = None,
        keyring: KeyRing | None = None,
        clock: Clock | None = None,
        decisions: DecisionLayer | None = None,
    ) -> None:
        self.database = database
        # The scheduler's idea of now (`[scheduler] clock_file`), for resuming an action.
        self.clock = clock or SystemClock()
        # The entry decision layer (`mind.actions`); None: off for every conversation.
        self.decisions = decisions
        self.core = core
        # The keys of sealed runs (`mind.sealing`), shared by every reader of this store.
        self.keyring = keyring or KeyRing(store_loader(database))
        self.profiles = profiles or ProfileBook.from_settings(
            ProfilesSettings(), core.registry.platform_names
        )
        # Where the runs' ephemeral events (text and thinking deltas, tool progress) go.
        self.bus = bus
        self.settings = settings
        # The welcome and error reply of each conversation (default: the Mind-wide settings).
        self.replies = replies or ConfiguredReplies.from_settings(settings)
        self._actors: dict[str, ConversationActor] = {}
        self._access: dict[str, tuple[str, list[str]]] = {}  # owner and members, by key
        self._actors_lock = asyncio.Lock()
        self._closing = False
        self.memory = Memory(database)

    async def recover(self) -> None:
        """At start: end runs a crash left `running` (queueing the next attempt of a firing
        whose run it was), then resume the queued inputs."""

        def unit(tx: WriteTx) -> list[models.Run]:
            interrupted = runs.running(tx)
            for run in interrupted:
                conversation = tx.session.get(models.Conversation, run.conversation_key)
                members = queries.members_of(tx.session, run.conversation_key)
                audience = [conversation.owner, *members] if conversation else members
                ended = runs.finish(
                    tx,
                    run.id,
                    state="interrupted",
                    reason=INTERRUPTED,
                    audience=audience,
                    keep_open=open_call_ids(tx.session, run.id),
                )
                if ended is not None and ended.redaction:
                    shredded[run.id] = ended.redaction
                if ended is not None and run.trigger == runs.PROACTIVE_TRIGGER:
                    proactive.retry_interrupted(tx, run.id, INTERRUPTED, audience)
            prune(tx.session, self.settings.outbox_keep)
            return interrupted

        shredded: dict[str, list[dict[str, str]]] = {}
        for run in await self.database.write(unit):
            log.info("run %s of %s recorded as interrupted", run.id, run.conversation_key)
        for run_id, redaction in shredded.items():
            self.keyring.shred(run_id, [Queried.from_json(item) for item in redaction])
        waiting = await self.database.read(inputs.conversations_with_queued)
        for key in waiting:
            await (await self._actor(key)).drain()

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
        if members and not key.startswith("g_"):
            raise InvalidInput("members are only allowed in group conversations ('g_' keys)")
        if len(members) > self.settings.max_members:
            raise InvalidInput(
                f"members lists {len(members)} principals; the maximum is "
                f"{self.settings.max_members} (setting mind.max_members)"
            )
        for member in members:
            check_principal(member, "members")
        if len(title) > MAX_TITLE:
            raise InvalidInput(f"title is {len(title)} characters; the maximum is {MAX_TITLE}")
        members = sorted(set(members) - {viewer.principal})
        declared = self.profiles.declared(profile)
        # The profile's own welcome, else the Mind-wide one.
        welcome = (declared.welcome if declared else "") or self.replies.welcome(key)

        def unit(tx: WriteTx) -> ConversationView:
            if tx.session.get(models.Conversation, key) is not None:
                raise self._key_taken(tx.session, viewer, key)
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

        try:
            view = await self.database.write(unit)
        except IntegrityError as exc:
            raise await self.database.read(
                lambda session: self._key_taken(session, viewer, key)
            ) from exc
        return view

    @staticmethod
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

    def list_profiles(self) -> builtins.list[ProfileSummary]:
        return self.profiles.summaries()

    async def set_profile(self, viewer: Viewer, key: str, profile: str) -> ConversationView:
        """The owner sets the profile the conversation's next run uses (InvalidInput when it
        is unknown or known to be bad, NotAllowed for members, NotFound when hidden)."""
        check_principal(viewer.principal)
        name = self._known_profile(profile)

        def unit(tx: WriteTx) -> ConversationView:
            row = choices.owned(tx, viewer, key)
            return choices.change(tx, row, lambda r: setattr(r, "profile", name))

        return await self._changed(key, await self.database.write(unit))

    async def set_profile_for_operator(self, key: str, profile: str) -> ConversationView:
        """The same for `tobe admin` (no owner check); NotFound for an unknown key."""
        name = self._known_profile(profile)

        def unit(tx: WriteTx) -> ConversationView:
            row = tx.session.get(models.Conversation, key)
            if row is None:
                raise NotFound(f"no conversation {key!r}")
            return choices.change(tx, row, lambda r: setattr(r, "profile", name))

        return await self._changed(key, await self.database.write(unit))

    async def set_active_hand(self, viewer: Viewer, key: str, hand: str) -> ConversationView:
        """The owner chooses the Hand whose tools the model sees ("" = every Hand)."""
        check_principal(viewer.principal)
        hand = choices.check_hand(hand)

        def unit(tx: WriteTx) -> ConversationView:
            row = choices.owned(tx, viewer, key)
            return choices.change(tx, row, lambda r: setattr(r, "active_hand", hand))

        return await self._changed(key, await self.database.write(unit))

    def active_hand_of(self, key: str) -> str:
        """The active Hand of a conversation with a loaded actor ("" = every Hand): the Hand
        tool source asks on every step, so this reads no store."""
        actor = self._actors.get(key)
        return actor.settings.active_hand if actor is not None else ""

    def _known_profile(self, profile: str) -> str:
        try:
            return self.profiles.check(profile)
        except ProfileError as exc:
            raise InvalidInput(str(exc)) from exc

    async def _changed(self, key: str, view: ConversationView) -> ConversationView:
        """Hand a committed change to the loaded actor (a run already going keeps its
        profile; the active Hand applies from its next step)."""
        async with self._actors_lock:
            actor = self._actors.get(key)
            if actor is not None:
                actor.settings.active_hand = view.active_hand
                if actor.settings.profile != view.profile:
                    actor.set_profile(view.profile)
        return view

    async def list(
        self, viewer: Viewer, limit: int, only: Sequence[str] = ()
    ) -> list[ConversationView]:
        """Newest first; `only`: these kinds (`mind.conversation.kinds`), empty for every kind."""
        check_principal(viewer.principal)
        wanted = kinds.checked(only)
        limit = _clamp(limit, 100, 1000)
        return await self.database.read(
            lambda session: queries.list_visible(session, viewer, limit, wanted)
        )

    async def send(
        self,
        viewer: Viewer,
        key: str,
        text: str,
        idempotency_key: str,
        steer: bool,
        mode: DetailMode,
        images: Sequence[ImageUpload] = (),
    ) -> SendResult:
        """Accept a person's message: text, images, or both (see `mind.conversation.images`)."""
        check_principal(viewer.principal)
        checked = check_images(
            images, max_bytes=self.settings.max_image_bytes, max_count=self.settings.max_images
        )
        _check_text(text, "send", self.settings.max_message_bytes, images=len(checked))
        _check_idempotency_key(idempotency_key, "send")
        actor = await self._visible_actor(viewer, key)
        chat = ChatInput(
            viewer.principal, text, idempotency_key, steer, mode.value, images=tuple(checked)
        )
        return await actor.submit(chat)

    async def post_as(
        self, viewer: Viewer, key: str, text: str, idempotency_key: str
    ) -> SendResult:
        """A client's post (Mind.PostMessage), posted by its principal; NotFound when it cannot
        see the conversation. The caller checks that it may post at all (scope `post`)."""
        check_principal(viewer.principal)
        _check_text(text, "post", self.settings.max_message_bytes)
        _check_idempotency_key(idempotency_key, "post")
        actor = await self._visible_actor(viewer, key)
        return await actor.post(text, idempotency_key, viewer.principal)

    async def post(
        self, key: str, text: str, idempotency_key: str, *, posted_by: str
    ) -> SendResult:
        """Post an assistant message written by the Mind's own code (no viewer checks).

        It joins the conversation's queue (see `mind.conversation.actor`): appended now when
        no run is active, else right after the active run's messages. Idempotent per key, in
        the key space of SendChat. NotFound for an unknown conversation, InvalidInput for bad
        text or key, ShuttingDown while stopping.
        """
        _check_text(text, "post", self.settings.max_message_bytes)
        _check_idempotency_key(idempotency_key, "post")
        if not posted_by:
            raise InvalidInput("posted_by is required: name who posts the message")
        await self.database.read(lambda session: queries.access(session, key))
        return await (await self._actor(key)).post(text, idempotency_key, posted_by)

    async def deliver_observation(
        self,
        key: str,
        text: str,
        idempotency_key: str,
        steer: bool,
        source: dict[str, object],
        *,
        images: Sequence[CheckedImage],
    ) -> SendResult:
        """Hand an observation note to a conversation (Awareness router; no viewer checks).

        Steering notes join the running run at its next step, or start one; others wait as a
        follow-up and start a run when the conversation is idle. Idempotent per key. `images`
        (checked by `mind.awareness.images`) are stored with the note, as a person's are.
        """
        actor = await self._actor(key)
        chat = ChatInput(
            "awareness", text, idempotency_key, steer, "summary", dict(source), tuple(images)
        )
        return await actor.submit(chat)

    async def deliver_firing(self, firing: FiringDelivery) -> None:
        """Queue a claimed firing's input in its conversation: its proactive run starts when
        the conversation is idle (`mind.conversation.proactive`). Idempotent per firing (the
        input is keyed `firing:<id>`), so the scheduler may deliver again after a crash."""
        actor = await self._actor(firing.conversation_key)
        chat = ChatInput(
            principal=firing.owner,
            text=proactive.note_text(firing),
            idempotency_key=firing.idempotency_key,
            steer=False,
            mode=DetailMode.SUMMARY.value,
            source=proactive.source(firing),
        )
        await actor.submit(chat)

    async def cancel(self, viewer: Viewer, key: str) -> str:
        check_principal(viewer.principal)
        return await (await self._visible_actor(viewer, key)).cancel()

    async def compact(self, viewer: Viewer, key: str) -> CompactionView:
        """Requested compaction by a client: NotFound if not visible, WrongState when nothing to
        compact, CompactionFailed when the summarising call failed, ShuttingDown."""
        check_principal(viewer.principal)
        return await (await self._visible_actor(viewer, key)).compact()

    async def compact_for_operator(self, key: str) -> CompactionView:
        """The same for `tobe admin` (no visibility check); NotFound for an unknown key.

        `_actor` would make an actor for any key, so the conversation must exist first.
        """
        await self.database.read(lambda session: queries.access(session, key))
        return await (await self._actor(key)).compact()

    async def snapshot(
        self, viewer: Viewer, key: str, message_limit: int, mode: DetailMode
    ) -> queries.Snapshot:
        check_principal(viewer.principal)
        limit = _clamp(message_limit, 50, 500)
        now = self.clock.now()

        def read(session: Session) -> queries.Snapshot:
            found = queries.snapshot(session, viewer, key, limit, mode, self.keyring)
            waiting = action_records.waiting(session, key, now)
            return dataclasses.replace(found, pending_actions=tuple(waiting))

        return await self.database.read(read)

    async def history(
        self, viewer: Viewer, key: str, after_message_id: int, limit: int, mode: DetailMode
    ) -> queries.HistoryPage:
        check_principal(viewer.principal)
        page_size = _clamp(limit, 100, 1000)
        return await self.database.read(
            lambda session: queries.history(
                session, viewer, key, after_message_id, page_size, mode, self.keyring
            )
        )

    async def list_memory(self, viewer: Viewer, key: str) -> MemoryListing:
        """A conversation's memory, for its owner and members (NotFound for anyone else)."""
        check_principal(viewer.principal)

        def read(session: Session) -> MemoryListing:
            queries.visible(session, viewer, key)
            return listing(session, key)

        return await self.database.read(read)

    async def delete_memory(self, viewer: Viewer, key: str, memory_key: str) -> bool:
        """Delete one memory entry as the conversation's owner; whether it existed.

        Members see the memory but may not delete from it (NotAllowed): it is the owner's.
        """
        check_principal(viewer.principal)
        owner = await self.database.read(
            lambda session: queries.visible(session, viewer, key)[0].owner
        )
        if viewer.principal != owner:
            raise NotAllowed(f"only the owner of {key} may delete from its memory")
        return await self.memory.delete(key, memory_key, run_id="")

    async def change_schedule(
        self, viewer: Viewer, schedule_id: str, change: schedules.Change
    ) -> ScheduledActionView:
        """Pause, resume or delete a scheduled action as its owner. Members see it but may
        not change it (NotAllowed); anyone else is told it does not exist."""
        check_principal(viewer.principal)

        def read(session: Session) -> str:
            owner, view = schedules.get_schedule(session, schedule_id)
            try:
                queries.visible(session, viewer, view.conversation_key)
            except NotFound as exc:
                raise NotFound(f"no scheduled action {schedule_id!r}") from exc
            return owner

        if viewer.principal != await self.database.read(read):
            raise NotAllowed(f"only the owner of scheduled action {schedule_id} may change it")
        now = self.clock.now()
        return await self.database.write(
            lambda tx: schedules.change_schedule(tx, schedule_id, change, now)
        )

    async def list_actions(
        self, viewer: Viewer, key: str, include_ended: bool
    ) -> tuple[builtins.list[PendingActionView], builtins.list[ScheduledActionView]]:
        """A conversation's actions waiting for confirmation and its scheduled actions, oldest
        first (every one with `include_ended`), for its owner and members (NotFound for anyone
        else)."""
        check_principal(viewer.principal)
        now = self.clock.now()

        def read(
            session: Session,
        ) -> tuple[builtins.list[PendingActionView], builtins.list[ScheduledActionView]]:
            queries.visible(session, viewer, key)
            scheduled = schedules.list_schedules(session, key, include_ended)
            if include_ended:
                return action_records.listing(session, key, pending_only=False), scheduled
            return action_records.waiting(session, key, now), scheduled

        return await self.database.read(read)

    async def decide_action(
        self,
        viewer: Viewer,
        action_id: str,
        choice: PendingChoice,
        amendment: str,
        idempotency_key: str,
    ) -> DecideResult:
        """The owner confirms, cancels or amends a pending action (see
        `mind.conversation.action_decisions`). NotAllowed for members, NotFound for an
        unknown or foreign action, WrongState when it was decided or expired."""
        check_principal(viewer.principal)
        _check_idempotency_key(idempotency_key, "decision")
        amendment = amendment.strip()
        if (choice is PendingChoice.AMEND) != bool(amendment):
            raise InvalidInput("an amendment (and only an amendment) needs `amendment`: the change")
        layer = self.decisions
        if layer is None:
            raise WrongState("the decision layer is not running in this Mind")
        action, owner, members = await self.database.read(lambda s: _action_access(s, action_id))
        if not can_see(viewer, owner, members):
            raise NotFound(f"no pending action {action_id!r}")
        if viewer.principal != owner:
            raise NotAllowed(f"only the owner of {action.conversation_key} decides its actions")
        key = action.conversation_key
        earlier = await self.database.first(
            inputs.BY_IDEMPOTENCY_KEY, key=key, idempotency_key=idempotency_key
        )
        if earlier is not None:
            return await self._decided(action_decisions.decided_by(earlier), earlier.run_id or "")
        now = layer.clock.now()
        if await self.database.write(lambda tx: action_records.expire_if_due(tx, action_id, now)):
            raise WrongState(f"action {action_id} expired at {action.expires_at.isoformat()}")
        if action.state is not PendingState.PENDING:
            raise WrongState(f"action {action_id} was already {action.state.value}")
        actor = await self._actor(key)
        if action_decisions.route(action, choice) is Route.RUN:
            chat = ChatInput(
                owner,
                action_decisions.text(action, choice, amendment),
                idempotency_key,
                False,
                DetailMode.SUMMARY.value,
                action_decisions.source(action_id, choice, amendment),
                also=action_decisions.in_run_unit(layer, action_id, choice),
            )
            sent = await actor.submit(chat)
            return await self._decided(action_id, sent.run_id)
        audience = [owner, *members]

        def unit(tx: WriteTx) -> DecideResult | None:
            if inputs.find(tx, key, idempotency_key) is not None:
                return None  # a concurrent retry took it first
            scheduled = action_decisions.at_once(tx, layer, action, choice, audience)
            action_decisions.record_input(tx, key, owner, idempotency_key, action, choice)
            view = action_records.view_of(action_records.find(tx.session, action_id))
            return DecideResult(view, "", scheduled)

        decided = await self.database.write(unit)
        return decided if decided is not None else await self._decided(action_id, "")

    async def _decided(self, action_id: str, run_id: str) -> DecideResult:
        view = await self.database.read(
            lambda s: action_records.view_of(action_records.find(s, action_id))
        )
        return DecideResult(view, run_id)

    async def continue_call(self, key: str, tool_call_id: str) -> None:
        """Continue the interrupted run of an open call (see `mind.conversation.continuation`)."""
        try:
            await (await self._actor(key)).continue_call(tool_call_id)
        except ShuttingDown:
            log.info("not continuing %s: the Mind is shutting down", tool_call_id)

    # `builtins.list`: in this class `list` names the method above.
    def audience_of(self, key: str) -> builtins.list[str]:
        """Owner and members of a conversation with a loaded actor (every running one has)."""
        actor = self._actors.get(key)
        return list(actor.audience) if actor is not None else []

    async def forget(self, key: str) -> None:
        """Drop the cached actor of a conversation an operator deleted (none of its runs run)."""
        async with self._actors_lock:
            self._actors.pop(key, None)
            self._access.pop(key, None)

    async def shutdown(self) -> None:
        """Refuse new messages; active runs end as interrupted (reason shutdown)."""
        self._closing = True
        async with self._actors_lock:
            actors = list(self._actors.values())
        await asyncio.gather(*(actor.stop("interrupted: the Mind shut down") for actor in actors))

    async def _visible_actor(self, viewer: Viewer, key: str) -> ConversationActor:
        access = self._access.get(key)
        if access is None:
            access = await self.database.read(lambda session: queries.access(session, key))
            # Owner and members never change while the conversation exists; deleting it
            # drops this entry (`forget`).
            self._access[key] = access
        if not can_see(viewer, *access):
            raise NotFound(f"no conversation {key!r}")
        return await self._actor(key)

    async def _actor(self, key: str) -> ConversationActor:
        async with self._actors_lock:
            if self._closing:
                raise ShuttingDown("the Mind is shutting down; retry after it restarts")
            actor = self._actors.get(key)
            if actor is None:
                audience, settings = await self.database.read(lambda s: _loaded(s, key))
                actor = ConversationActor(
                    key,
                    audience,
                    self.database,
                    self.core,
                    bus=self.bus,
                    replies=self.replies,
                    settings=settings,
                    profiles=self.profiles,
                    keyring=self.keyring,
                    decisions=self.decisions,
                )
                self._actors[key] = actor
            return actor
