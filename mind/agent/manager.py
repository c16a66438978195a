"""The Mind's API facade: every conversation operation, by API group.

Each group checks its input and visibility and reaches a conversation through the pool of
actors (`mind.agent.actors`), which also owns crash recovery and graceful shutdown. The
servicers call the group they need.
"""

from __future__ import annotations

from mind.actions.layer import DecisionLayer
from mind.agent.actions import Actions
from mind.agent.actors import ConversationActors
from mind.agent.conversations import Conversations
from mind.agent.images import ConversationImages
from mind.agent.memory import ConversationMemory
from mind.agent.messages import Messages
from mind.agent.platform import PlatformScopes, RunTools
from mind.agent.runs import Runs
from mind.agent.usage import ConversationUsage
from mind.agent.widgets import ConversationWidgets
from mind.conversation.replies import ConfiguredReplies, ReplyTexts
from mind.core.loop import AgentCore
from mind.events.bus import EventBus
from mind.profiles.book import ProfileBook
from mind.providers.prices import Pricing
from mind.scheduler.clock import SystemClock
from mind.scheduler.model import Clock
from mind.sealing.keyring import KeyRing
from mind.sealing.turns import store_loader
from mind.store.database import Database
from mind.usage.reports import UsageReports
from tobe.config import MindSettings, ProfilesSettings


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
        usage: UsageReports | None = None,
    ) -> None:
        self.database = database
        # The scheduler's idea of now (`[scheduler] clock_file`), for resuming an action.
        self.clock = clock or SystemClock()
        # The entry decision layer (`mind.actions`); None: off for every conversation.
        self.decisions = decisions
        # The keys of sealed runs (`mind.sealing`), shared by every reader of this store.
        self.keyring = keyring or KeyRing(store_loader(database))
        self.actors = ConversationActors(
            database,
            core,
            settings,
            bus=bus,
            # The welcome and error reply of each conversation (default: the Mind-wide ones).
            replies=replies or ConfiguredReplies.from_settings(settings),
            profiles=profiles
            or ProfileBook.from_settings(ProfilesSettings(), core.registry.platform_names),
            keyring=self.keyring,
            clock=self.clock,
            decisions=decisions,
        )
        self.conversations = Conversations(self.actors)
        self.messages = Messages(self.actors)
        self.actors.scopes = PlatformScopes(
            database,
            self.messages.post,
            self.clock,
            core.time_zone_of,
            RunTools(self.actors.run_scope, core.registry, core.runtime),
        )
        self.runs = Runs(self.actors)
        self.memory = ConversationMemory(database)
        self.actions = Actions(self.actors)
        # Token usage as recorded (`mind.usage`); without the Mind's ledger, the store's rows.
        self.images = ConversationImages(database)
        self.widgets = ConversationWidgets(database)
        self.usage = ConversationUsage(database, usage or UsageReports(database, Pricing.of()))
