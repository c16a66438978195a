"""What one conversation's actor keeps, and the values its parts pass each other.

The actor (`mind.agent.actor`) is composed of three parts, each a module over this state:
queue and submit (`mind.agent.intake`), run execution (`mind.agent.execution`) and run
finish (`mind.agent.finish`). The state lives here, once, so that each part reads and writes
the same fields; the few calls from one part into another are declared here as abstract.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from mind.actions.layer import DecisionLayer
from mind.agent.platform import ConversationScope, PlatformScopes
from mind.agent.proactive import ProactiveRun
from mind.conversation.delegations import ChildBrief
from mind.conversation.history import ContextSummary, HistoryMessage
from mind.conversation.images import CheckedImage
from mind.conversation.lease import MutationLease
from mind.conversation.quotes import CheckedForward
from mind.conversation.replies import ReplyTexts
from mind.conversation.sources import PERSON, InputSource
from mind.core.loop import AgentCore, RunOutcome
from mind.core.tool_runtime import RunScope
from mind.core.view import ProviderView
from mind.events.bus import EphemeralEvent, EventBus
from mind.events.views import CompactionView, RunState
from mind.profiles.book import ProfileBook
from mind.profiles.model import DEFAULT_PROFILE, ConversationInfo, Profile
from mind.profiles.scope import CANCELLED, EVICTED
from mind.providers.base import ImagePart
from mind.sealing.keyring import KeyRing
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx

RUN_HOLDER = "run"
COMPACTION_HOLDER = "compaction"
CANCELLED_BY_USER = "cancelled by the user"


@dataclass(frozen=True)
class ChatInput:
    principal: str
    text: str
    idempotency_key: str
    steer: bool
    mode: str
    # What it came from: a person, or (delivered as a note) an observation, firing, decision.
    source: InputSource = PERSON
    # Checked images sent with the text, stored in the unit that accepts the input.
    images: tuple[CheckedImage, ...] = ()
    # The message it quotes (0: none), and the chat record forwarded with it (a person's).
    reply_to: int = 0
    forwarded: tuple[CheckedForward, ...] = ()
    # Also done in the accepting unit (not for a retry), given the run it started ("" when
    # queued): an owner's decision on a pending action commits with its input.
    also: Callable[[WriteTx, str], None] | None = None


@dataclass(frozen=True)
class RunStart:
    """The input that started a run: what the decision layer reads."""

    text: str
    source: InputSource


@dataclass(frozen=True)
class SendResult:
    input_id: int
    message_id: int
    run_id: str
    queued: bool
    duplicate: bool


@dataclass
class ActiveRun:
    run_id: str
    principal: str
    mode: str
    task: asyncio.Task[None] | None = None
    # Set by cancel/stop before the task is cancelled: (state, reason) to record.
    stop_as: tuple[RunState, str] = (RunState.CANCELLED, CANCELLED_BY_USER)
    steer_waiting: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)
    # Continuation run: the approval-gated tool call whose batch it finishes first.
    resume_call: str = ""
    permissions: dict[str, bool] = field(default_factory=dict)
    # None for a continuation run.
    start: RunStart | None = None
    # A firing's run (`mind.agent.proactive`); None for every other run.
    proactive: ProactiveRun | None = None
    # What started it (`runs.start`): "user", "followup", "schedule", ...
    trigger: str = ""
    # What started it, in a person's words (`mind.conversation.origins`).
    origin: str = ""
    # Its tools' scope, once its execution began (profile code reads sensitive data in it).
    scope: RunScope | None = None


@dataclass
class ConversationSettings:
    """Who owns the conversation and what it runs with, as stored (`conversations` row)."""

    owner: str = ""
    # "" = the default profile.
    profile: str = ""
    # "" = every Hand of the owner.
    active_hand: str = ""
    # A child conversation's brief (its tools and budget: `mind.conversation.delegations`).
    child: ChildBrief | None = None


class ActorState(ABC):
    """The fields of one conversation's actor, and what every part of it reads."""

    def __init__(
        self,
        key: str,
        audience: list[str],
        database: Database,
        core: AgentCore,
        *,
        bus: EventBus,
        replies: ReplyTexts,
        settings: ConversationSettings | None = None,
        profiles: ProfileBook | None = None,
        keyring: KeyRing | None = None,
        decisions: DecisionLayer | None = None,
        scopes: PlatformScopes | None = None,
    ) -> None:
        self.key = key
        # The platform its profile code gets; without it, code gets none (`platform` None).
        self._scopes = scopes
        self._scope: ConversationScope | None = None
        # The entry decision layer; without one, every run is offered all its tools.
        self.decisions = decisions
        # The keys of sealed runs; without one, no run is sealed and nothing sealed opens.
        self.keyring = keyring
        self.audience = audience
        self.settings = settings or ConversationSettings()
        # Without a book every run uses the built-in default profile.
        self._profiles = profiles
        self._profile: Profile | None = None
        self.database = database
        self.core = core
        self.bus = bus
        self.replies = replies
        self.lease = MutationLease()
        # The context as last read (`_history`): the latest summary and the messages after
        # it; and that transcript as last rendered for the provider.
        self._summary: ContextSummary | None = None
        self._summary_read = False
        self._transcript: list[HistoryMessage] = []
        # The images of the messages last read, by digest: read once, not on every read.
        self._images: dict[str, ImagePart] = {}
        self._view = ProviderView()
        self._lock = asyncio.Lock()
        self._run: ActiveRun | None = None
        self._closing = False
        # Open tool calls of interrupted runs waiting for their continuation run.
        self._resumes: list[str] = []
        # False once the queue was seen empty, until this actor queues an input (the only
        # way one gets queued); at first unknown (inputs may wait from before a restart).
        self._maybe_queued = True
        # Requested compactions waiting for the lease, each answered with its outcome.
        self._compactions: list[asyncio.Future[CompactionView]] = []
        # Callers between taking this actor from the pool and their last call on it, and when
        # one last let go (`mind.agent.actors` evicts only an idle actor nobody holds).
        self.holders = 0
        self.released_at = time.monotonic()

    @property
    def idle(self) -> bool:
        """No run, no compaction and no continuation active or waiting; nobody holding it."""
        return (
            self.holders == 0
            and self._run is None
            and not self.lease.held
            and not self._compactions
            and not self._resumes
        )

    def run_scope(self, run_id: str) -> RunScope | None:
        """The scope of the active run `run_id`; None when that run is not the active one."""
        run = self._run
        return run.scope if run is not None and run.run_id == run_id else None

    @property
    def stopping(self) -> bool:
        """Whether the active run is being stopped to continue later (the Mind stops, the
        conversation's lease was lost), not cancelled: its children go on."""
        run = self._run
        return run is not None and run.stop_as[0] is RunState.INTERRUPTED

    def evict(self) -> None:
        """Let go of an idle actor: it refuses everything from now on (a new one takes over),
        and its profile code's signal fires."""
        self._closing = True
        self.close_scope(EVICTED)

    def forget_context(self) -> None:
        """Let go of the context kept between runs (the summary, the transcript, its images
        and its rendering): an idle actor's largest part. The next run reads it again from
        the store, as a newly loaded actor does."""
        self._summary = None
        self._summary_read = False
        self._transcript = []
        self._images = {}
        self._view = ProviderView()

    def set_profile(self, name: str) -> None:
        """The conversation now runs with `name`: its next run makes that profile."""
        self.settings.profile = name
        self._profile = None

    async def profile(self) -> Profile:
        """The conversation's profile, made on first use; ProfileError when it cannot run.

        A failure is not kept: the next run tries again (a factory may fail only for a while).
        Each making opens a scope of its own (`mind.agent.platform`), closed by `close_scope`.
        """
        if self._profile is None:
            if self._profiles is None:
                return DEFAULT_PROFILE
            owner = self.settings.owner
            info = ConversationInfo(self.key, owner, self.settings.profile)
            scope = self._scopes.open(self.key, owner) if self._scopes is not None else None
            if scope is not None:
                info = replace(info, platform=scope.platform, signal=scope.signal)
            try:
                self._profile = await self._profiles.resolve(info)
            except BaseException:
                if scope is not None:
                    scope.close(CANCELLED)
                raise
            self._scope = scope
        return self._profile

    def close_scope(self, reason: str) -> None:
        """Fire the signal profile code was given (`mind.profiles.scope` names the reasons)
        and make the profile again for the next run. The actor calls it when a run is
        cancelled or stopped, the pool when the conversation is deleted or the actor evicted.
        """
        if self._scope is not None:
            self._scope.close(reason)
            self._scope = None
        self._profile = None

    def _publish(self, kind: str, run_id: str, **fields: object) -> None:
        self.bus.publish(
            EphemeralEvent(
                kind=kind,  # type: ignore[arg-type]
                conversation_key=self.key,
                audience=tuple(self.audience),
                run_id=run_id,
                time=datetime.now(UTC),
                **fields,  # type: ignore[arg-type]
            )
        )

    @abstractmethod
    async def _start_next(self) -> None:
        """Under the state lock: start what waits for the lease (`mind.agent.intake`)."""

    @abstractmethod
    def _launch(
        self,
        run: models.Run,
        principal: str,
        resume_call: str = "",
        start: RunStart | None = None,
    ) -> None:
        """Take the lease for a started run and run it (`mind.agent.execution`)."""

    @abstractmethod
    async def _finish(
        self, active: ActiveRun, state: RunState, reason: str, outcome: RunOutcome | None
    ) -> None:
        """Record a run's end, then start what waits (`mind.agent.finish`)."""
