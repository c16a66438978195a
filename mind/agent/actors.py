"""The conversations' actors of one Mind: one per conversation, made on first use.

Every API group reaches a conversation through this pool, holding its actor for the span of
its calls on it (`holding`). It also owns what concerns all of them at once: taking a
conversation over (`adopt`: at start, or when the Mind that owned it on a shared database is
gone; runs a crash left `running` end as interrupted, the queued inputs resume), the
conversation's lease (`mind.cluster.leases`: taken with the actor, given back when it is let
go, the actor stopped when it is lost), graceful shutdown, handing the owner's committed
choices (profile, active Hand) to a loaded actor, which keeps them, and eviction: an actor
idle and unheld for `[mind] actor_idle_seconds`, or the least recently used idle ones beyond
`[mind] max_actors`, is let go, so memory stays bounded however many conversations there are;
the next call loads a new one from the store (queued inputs live there). Before that, an
actor idle for a quarter of that time lets go of its cached context (`forget_context`). One
actor per conversation at a time holds: an actor leaves the pool only under the pool's lock,
while nobody holds it and it runs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.orm import Session

from mind.actions.layer import DecisionLayer
from mind.agent import proactive
from mind.agent.actor import ConversationActor
from mind.agent.actor_state import ConversationSettings
from mind.agent.platform import PlatformScopes
from mind.cluster.errors import LOST_HOLD, OwnedElsewhere
from mind.cluster.leases import Leases, SoleLeases
from mind.conversation import delegations, inputs, queries, runs
from mind.conversation.access import Viewer, can_see
from mind.conversation.continuation import open_call_ids
from mind.conversation.errors import ShuttingDown
from mind.conversation.replies import ReplyTexts
from mind.core.loop import AgentCore
from mind.core.tool_runtime import RunScope
from mind.errors import NotFound, WrongState
from mind.events.bus import EventBus
from mind.events.views import ConversationView, RunState
from mind.profiles import scope
from mind.profiles.book import ProfileBook
from mind.scheduler.model import Clock
from mind.sealing.keyring import KeyRing, Queried
from mind.store import models
from mind.store.database import Database
from mind.store.outbox import prune
from mind.store.write_tx import WriteTx
from tobe.config import MindSettings

log = logging.getLogger(__name__)

INTERRUPTED = "interrupted: the Mind stopped while the run was active"

# The share of `actor_idle_seconds` after which an idle actor lets go of its cached context
# (the transcript and its rendering for the provider: most of what it holds), staying loaded
# with its profile and the scope its code was given; its next run reads the context again
# (the latest summary and the messages after it). A conversation in use keeps its cache
# between turns; hundreds merely left open cost little more than their actors.
CONTEXT_KEPT_SHARE = 0.25


def _loaded(session: Session, key: str) -> tuple[list[str], ConversationSettings]:
    """Owner and members of a conversation (the members alone when it is gone), and what it
    runs with."""
    conversation = session.get(models.Conversation, key)
    if conversation is None:
        return queries.members_of(session, key), ConversationSettings()
    child = delegations.of_child(session, key)
    settings = ConversationSettings(
        conversation.owner,
        conversation.profile,
        conversation.active_hand,
        delegations.brief(child) if child is not None else None,
    )
    return [conversation.owner, *queries.members_of(session, key)], settings


class ConversationActors:
    def __init__(
        self,
        database: Database,
        core: AgentCore,
        settings: MindSettings,
        *,
        bus: EventBus,
        replies: ReplyTexts,
        profiles: ProfileBook,
        keyring: KeyRing,
        clock: Clock,
        decisions: DecisionLayer | None,
    ) -> None:
        self.database = database
        self.core = core
        self.settings = settings
        # Where the runs' ephemeral events (text and thinking deltas, tool progress) go.
        self.bus = bus
        # The welcome and error reply of each conversation.
        self.replies = replies
        self.profiles = profiles
        # The keys of sealed runs (`mind.sealing`), shared by every reader of this store.
        self.keyring = keyring
        # The scheduler's idea of now (`[scheduler] clock_file`).
        self.clock = clock
        # The entry decision layer (`mind.actions`); None: off for every conversation.
        self.decisions = decisions
        # The platform profile code gets (set by the manager, whose posts it makes).
        self.scopes: PlatformScopes | None = None
        self._actors: dict[str, ConversationActor] = {}
        self._access: dict[str, tuple[str, list[str]]] = {}  # owner and members, by key
        self._lock = asyncio.Lock()
        self._closing = False
        self._swept_at = time.monotonic()
        # Which conversations this Mind owns (`mind.cluster`; set by the composition root).
        self.leases: Leases = SoleLeases()
        # Continues the open calls of a conversation taken over while running (set by the
        # composition root: `mind.approvals.continuation`); at start they continue anyway.
        self.on_adopted: Callable[[str], Awaitable[None]] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._ending: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        # The lease epoch each loaded actor was made under.
        self._epochs: dict[str, int] = {}

    async def recover(self) -> None:
        """At start: take over each conversation with unfinished work (`adopt`) that no other
        live Mind owns."""
        await self.database.write(lambda tx: prune(tx.session, self.settings.outbox_keep))
        running = await self.database.read(runs.conversations_running)
        waiting = await self.database.read(inputs.conversations_with_queued)
        for key in dict.fromkeys([*running, *waiting]):
            with contextlib.suppress(OwnedElsewhere):
                await self.adopt(key)

    async def adopt(self, key: str) -> None:
        """Take conversation `key` over (OwnedElsewhere while another live Mind owns it):
        end the run a crash left `running` as interrupted (queueing the next attempt of a
        firing whose run it was), then resume the queued inputs. At start, and for a
        conversation whose owner stopped renewing its lease or cannot be reached."""
        if not self.leases.shared:
            await self._end_left_running(key)
        # On a shared store `holding` takes the lease and ends that run when it loads the actor,
        # under the pool's lock: ended here, a request's run started in between would be ended
        # instead.
        async with self.holding(key, resume=False) as actor:
            await actor.drain()
        if self.on_adopted is not None:
            await self.on_adopted(key)

    async def _end_left_running(self, key: str) -> bool:
        """End as interrupted the run of `key` left `running` by a crash, or by another Mind
        that held it before (queueing the next attempt of a firing whose run it was); whether
        there was one."""

        def unit(tx: WriteTx) -> list[models.Run]:
            interrupted = runs.running(tx, key)
            for run in interrupted:
                conversation = tx.session.get(models.Conversation, key)
                members = queries.members_of(tx.session, key)
                audience = [conversation.owner, *members] if conversation else members
                ended = runs.finish(
                    tx,
                    run.id,
                    state=RunState.INTERRUPTED,
                    reason=INTERRUPTED,
                    audience=audience,
                    keep_open=open_call_ids(tx.session, run.id),
                )
                if ended is not None and ended.redaction:
                    shredded[run.id] = ended.redaction
                if ended is not None and run.trigger == runs.PROACTIVE_TRIGGER:
                    proactive.retry_interrupted(tx, run.id, INTERRUPTED, audience)
            return interrupted

        shredded: dict[str, list[dict[str, str]]] = {}
        # One at a time per conversation: a takeover by a request and `adopt` may meet here.
        async with self._ending[key]:
            interrupted = await self.database.write(unit)
        for run in interrupted:
            log.info("run %s of %s recorded as interrupted", run.id, key)
        for run_id, redaction in shredded.items():
            self.keyring.shred(run_id, [Queried.from_json(item) for item in redaction])
        return bool(interrupted)

    async def _resume_taken(self, key: str) -> None:
        """After a conversation was taken over by a request rather than `adopt`: resume its
        queued inputs and continue its open calls, as `adopt` does."""
        with contextlib.suppress(OwnedElsewhere, ShuttingDown):
            async with self.holding(key) as actor:
                await actor.drain()
            if self.on_adopted is not None:
                await self.on_adopted(key)

    def drain_in_background(self, key: str) -> None:
        """Start `key`'s queued inputs from the pool's own task, so that whatever happens to
        the caller does not keep them waiting (a child run whose parent was stopped right
        after it queued the child's task)."""
        self._spawn(self._drain(key))

    async def _drain(self, key: str) -> None:
        with contextlib.suppress(OwnedElsewhere, ShuttingDown):
            async with self.holding(key) as actor:
                await actor.drain()

    async def lost(self, key: str) -> None:
        """This Mind no longer owns `key` (`mind.cluster.leases`): its actor goes, and its run
        stops; what the run could not write, the new owner resumes."""
        async with self._lock:
            actor = self._actors.pop(key, None)
            self._access.pop(key, None)
            self._epochs.pop(key, None)
        if actor is not None:
            await actor.stop(LOST_HOLD)

    async def continue_call(self, key: str, tool_call_id: str) -> None:
        """Continue the interrupted run of an open call (see `mind.conversation.continuation`)."""
        try:
            async with self.holding(key) as actor:
                await actor.continue_call(tool_call_id)
        except ShuttingDown:
            log.info("not continuing %s: the Mind is shutting down", tool_call_id)
        except OwnedElsewhere as owner:
            # Several Minds share the store: the owner continues it, or whoever adopts it.
            log.info("not continuing %s here: %s", tool_call_id, owner)

    @property
    def closing(self) -> bool:
        """Whether the Mind is stopping (its runs end interrupted, to continue at the next
        start)."""
        return self._closing

    def stop_check(self, key: str) -> Callable[[], bool]:
        """Asks later whether conversation `key`'s active run is being stopped rather than
        cancelled; it keeps the actor loaded now, so it still answers once a lost lease
        removed that actor from the pool."""
        actor = self._actors.get(key)
        return lambda: self._closing or (actor is not None and actor.stopping)

    async def cancel_run(self, key: str, reason: str) -> bool:
        """Cancel conversation `key`'s active run with `reason`; False when none runs."""
        try:
            async with self.holding(key) as actor:
                await actor.cancel(reason)
        except WrongState:
            return False
        return True

    def audience_of(self, key: str) -> list[str]:
        """Owner and members of a conversation with a loaded actor (every running one has)."""
        actor = self._actors.get(key)
        return list(actor.audience) if actor is not None else []

    def run_scope(self, key: str, run_id: str) -> RunScope | None:
        """The scope of conversation `key`'s active run `run_id` (None: not running)."""
        actor = self._actors.get(key)
        return actor.run_scope(run_id) if actor is not None else None

    def active_hand_of(self, key: str) -> str:
        """The active Hand of a conversation with a loaded actor ("" = every Hand): the Hand
        tool source asks on every step, so this reads no store."""
        actor = self._actors.get(key)
        return actor.settings.active_hand if actor is not None else ""

    async def changed(self, key: str, view: ConversationView) -> ConversationView:
        """Hand a committed change to the loaded actor (a run already going keeps its
        profile; the active Hand applies from its next step)."""
        async with self._lock:
            actor = self._actors.get(key)
            if actor is not None:
                actor.settings.active_hand = view.active_hand
                if actor.settings.profile != view.profile:
                    actor.set_profile(view.profile)
        return view

    async def forget(self, key: str) -> None:
        """Drop the cached actor of a conversation an operator deleted (none of its runs run),
        firing the signal its profile code was given."""
        async with self._lock:
            actor = self._actors.pop(key, None)
            self._access.pop(key, None)
            self._epochs.pop(key, None)
        if actor is not None:
            actor.close_scope(scope.DELETED)

    async def shutdown(self) -> None:
        """Refuse new messages; active runs end as interrupted (reason shutdown)."""
        self._closing = True
        async with self._lock:
            actors = list(self._actors.values())
        await asyncio.gather(*(actor.stop("interrupted: the Mind shut down") for actor in actors))

    @asynccontextmanager
    async def visible(self, viewer: Viewer, key: str) -> AsyncIterator[ConversationActor]:
        """Hold the actor of a conversation `viewer` can see; NotFound otherwise."""
        await self._check_visible(viewer, key)
        async with self.holding(key) as actor:
            yield actor

    async def _check_visible(self, viewer: Viewer, key: str) -> None:
        access = self._access.get(key)
        if access is None:
            access = await self.database.read(lambda session: queries.access(session, key))
            # Owner and members never change while the conversation exists; deleting it
            # drops this entry (`forget`).
            self._access[key] = access
        if not can_see(viewer, *access):
            raise NotFound(f"no conversation {key!r}")

    @asynccontextmanager
    async def holding(self, key: str, *, resume: bool = True) -> AsyncIterator[ConversationActor]:
        """Hold the actor of `key`, made on first use (no check that the conversation
        exists): it is not evicted until the block ends. `resume`: when loading it ends a run
        another Mind left running, resume the conversation's work in the background (`adopt`
        resumes it itself)."""
        actor = await self._take(key, resume)
        try:
            yield actor
        finally:
            actor.holders -= 1
            actor.released_at = time.monotonic()

    @property
    def loaded(self) -> int:
        """How many actors are in memory."""
        return len(self._actors)

    async def _take(self, key: str, resume: bool) -> ConversationActor:
        async with self._lock:
            if self._closing:
                raise ShuttingDown("the Mind is shutting down; retry after it restarts")
            actor = self._actors.get(key)
            if actor is not None and (
                not self.leases.holds(key) or self._epochs.get(key) != self.leases.epoch(key)
            ):
                # Its lease ran out before the renewal noticed (and may have been taken again
                # since, at a new epoch, outside this pool): it may not write any more.
                del self._actors[key]
                self._spawn(actor.stop(LOST_HOLD))
                actor = None
            if actor is None:
                await self.leases.acquire(key)
                # Another Mind may have held it, and left its run `running` (on a shared store
                # a request can take a conversation over before `adopt` does).
                if self.leases.shared and await self._end_left_running(key) and resume:
                    self._spawn(self._resume_taken(key))
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
                    scopes=self.scopes,
                )
                self._actors[key] = actor
                self._epochs[key] = self.leases.epoch(key)
            actor.holders += 1
            self._evict(time.monotonic())
            return actor

    def _evict(self, now: float) -> None:
        """Under the pool's lock: let go of the idle actors unused for too long (looked for
        at most every quarter of that time), then of the least recently used idle ones while
        more than `max_actors` are loaded; the idle ones kept that were unused for a quarter
        of that time let go of their cached context."""
        idle_for = self.settings.actor_idle_seconds
        stale = now - self._swept_at >= idle_for / 4
        if not stale and len(self._actors) <= self.settings.max_actors:
            return
        if stale:
            self._swept_at = now
        idle = sorted(
            (actor for actor in self._actors.values() if actor.idle),
            key=lambda actor: actor.released_at,
        )
        over = len(self._actors) - self.settings.max_actors
        evicted = 0
        for actor in idle:
            if over <= 0 and now - actor.released_at < idle_for:
                break
            actor.evict()
            del self._actors[actor.key]
            self._epochs.pop(actor.key, None)
            self._access.pop(actor.key, None)
            self._spawn(self.leases.release(actor.key))
            over -= 1
            evicted += 1
        for actor in idle[evicted:]:
            if now - actor.released_at >= idle_for * CONTEXT_KEPT_SHARE:
                actor.forget_context()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
