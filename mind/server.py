"""Process wiring of the Mind: `build` assembles the components, `serve` runs them until
SIGTERM or SIGINT and shuts them down.

Other components plug in here with a couple of lines on `MindApp`: a remote tool source with
`app.tools.add_source(...)`, another gRPC service with `app.services.append(ServiceSpec(...))`,
start/stop work with `app.on_start` / `app.on_stop`, an Authorizer with
`app.runtime.authorizer = ...`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mind.actions.expiry import PendingExpiry
from mind.actions.layer import DecisionLayer
from mind.agent.delegation import ChildRuns, DelegateTool
from mind.agent.manager import ConversationManager
from mind.api.mind_servicer import MindServicer
from mind.approvals.wiring import Approvals
from mind.awareness.attach import attach_awareness
from mind.awareness.health import AdapterReport
from mind.context.budget import Budget, TokenEstimator
from mind.context.engine import CompactionEngine
from mind.core.ledgers import Ledgers
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.credentials import store_authenticator
from mind.credentials.cache import CachedAuthenticator
from mind.credentials.identity import Identity
from mind.credentials.interceptor import AuthInterceptor
from mind.credentials.last_seen import LastSeen
from mind.credentials.live_calls import LiveCalls
from mind.credentials.provider_keys import ProviderKeyError
from mind.credentials.revocation_reports import RevocationReports
from mind.events.bus import EventBus
from mind.management.attach import attach_management
from mind.management.pairing import Pairing
from mind.memory.store import Memory
from mind.memory.tools import memory_tools
from mind.profiles.book import ProfileBook
from mind.providers.base import Provider
from mind.providers.catalog import ModelInfo
from mind.providers.factory import ProviderConfigError, thinking_level
from mind.providers.prices import Pricing
from mind.recall import semantic as recall_semantic
from mind.recall.indexer import RecallIndexer
from mind.recall.tool import RecallTool
from mind.remote.execution import RemoteExecution
from mind.remote.model import ImageLimits
from mind.remote.notes import BackgroundNotes
from mind.resources.catalog import READ_RESOURCE
from mind.resources.store import ResourceStore
from mind.scheduler.attach import attach_scheduler
from mind.scheduler.clock import clock_from
from mind.scheduler.service import Scheduler
from mind.scripted.configured import build_provider
from mind.scripted.script import ScriptError
from mind.sealing.keyring import KeyRing
from mind.sealing.turns import store_loader
from mind.skills.prompt import VIEW_SKILL
from mind.skills.store import SkillStore
from mind.skills.watcher import DirectoryWatcher
from mind.store.database import Database
from mind.store.engine import is_sqlite
from mind.store.models import OutboxEvent
from mind.tools.builtin import builtin_tools
from mind.usage.ledger import UsageLedger
from mind.usage.metered import MeteredProvider
from mind.usage.reports import UsageReports
from mind.widgets.tools import WIDGET_POSTER, WIDGET_TOOLS, WidgetToolSource
from tobe.api_keys import KeyLookup
from tobe.config import ContextSettings, MindSettings, ProviderSettings, Settings
from tobe.runtime.publishing import published_address
from tobe.runtime.server import (
    DEFAULT_MAX_MESSAGE_BYTES,
    BindError,
    GrpcServer,
    ServiceSpec,
    run_until_signal,
    start_server,
)
from tobe.runtime.tls import ServerTls, client_certificates
from tobe.v1 import mind_pb2, mind_pb2_grpc

if TYPE_CHECKING:
    from mind.cluster.shared import SharedStore

log = logging.getLogger(__name__)

MIND_SERVICE = mind_pb2.DESCRIPTOR.services_by_name["Mind"].full_name
SHUTDOWN_GRACE_SECONDS = 3.0

Hook = Callable[[], Awaitable[None]]


def max_request_bytes(settings: MindSettings) -> int:
    """The largest request the Mind reads: a SendChat with the most and largest images allowed
    and the longest text, plus room for the framing (never below the platform default)."""
    images = settings.max_images * settings.max_image_bytes
    return max(DEFAULT_MAX_MESSAGE_BYTES, images + settings.max_message_bytes + 1024 * 1024)


@dataclass
class MindApp:
    settings: Settings
    # The store: one durable writer, reads that never block it (`mind.store.database`).
    database: Database
    bus: EventBus
    tools: ToolRegistry
    runtime: ToolRuntime
    provider: Provider
    core: AgentCore
    manager: ConversationManager
    services: list[ServiceSpec] = field(default_factory=list)
    on_start: list[Hook] = field(default_factory=list)
    on_stop: list[Hook] = field(default_factory=list)
    # Hands, remote tasks and HandLink.
    remote: RemoteExecution | None = None
    # Every live authenticated stream by credential; `live_calls.revoke` cuts them.
    live_calls: LiveCalls = field(default_factory=LiveCalls)
    # Client connections the gateways closed for a revocation, as they report them.
    revocation_reports: RevocationReports = field(default_factory=RevocationReports)
    # Where the Mind service listens once serving (`host:port` with the bound port).
    address: str = ""
    # Awareness's adapters and their health; set when Awareness is configured.
    adapter_health: Callable[[], Awaitable[AdapterReport]] | None = None
    # Time and condition triggers (`mind.scheduler.attach`); the Awareness router shows it the
    # observations it delivers.
    scheduler: Scheduler | None = None
    # Token usage of every model request (`mind.usage`), and the reports read from it.
    usage: UsageReports | None = None
    # The widget tools, offered while a widget type exists; told when the types change.
    widget_tools: WidgetToolSource | None = None
    # This Mind's part in a PostgreSQL database other Minds share (`mind.cluster`).
    shared: SharedStore | None = None

    def __post_init__(self) -> None:
        # Every call authenticates through the cache; `last_seen_at` is written once a minute.
        self.authenticate = LastSeen(self.database).recording(
            CachedAuthenticator(store_authenticator(self.database), self.live_calls.is_revoked)
        )

    async def authenticate_client(self, token: str) -> Identity | None:
        return await self.authenticate(token)

    async def start(self, listen: str, tls: ServerTls | None = None) -> GrpcServer:
        """Recover from the last stop, run start hooks, then start serving (TLS on a TCP
        `listen` with `tls`). When `listen` cannot be bound, stops what the hooks started and
        raises BindError."""
        if self.shared is not None:
            await self.shared.join()
        await self.manager.actors.recover()
        for hook in self.on_start:
            await hook()
        try:
            server = await start_server(
                self.services,
                [listen],
                interceptors=[AuthInterceptor(self.authenticate, live=self.live_calls)],
                max_receive_bytes=max_request_bytes(self.settings.mind),
                tls=tls,
                probe_listen=self.settings.mind.probe_listen,
            )
        except BindError:
            await self.close(None)
            raise
        self.address = server.address(listen)
        if self.shared is not None:
            from mind.cluster.membership import advertised

            await self.shared.advertise(
                advertised(self.settings.mind.advertise_address, self.address)
            )
        return server

    async def close(self, server: GrpcServer | None) -> None:
        """Stop accepting, end active runs as interrupted, drain, release everything."""
        if server is not None:
            await server.set_serving(False)
        self.runtime.begin_shutdown()
        if self.remote is not None:
            self.remote.begin_shutdown()
        await self.manager.actors.shutdown()
        if self.shared is not None:
            await self.shared.leave()
        for hook in reversed(self.on_stop):
            await hook()
        self.bus.close()
        if server is not None:
            await server.stop(SHUTDOWN_GRACE_SECONDS)
        await self.provider.aclose()
        await self.database.close()


def compaction_engine(
    settings: ContextSettings, database: Database, provider: Provider
) -> CompactionEngine | None:
    """Compaction for a provider whose model has a catalog entry (a known window)."""
    info = getattr(provider, "info", None)
    if not isinstance(info, ModelInfo):
        return None
    estimator = TokenEstimator(settings.chars_per_token)
    return CompactionEngine(database, provider, Budget.of(info, settings), estimator, settings)


def decision_provider(settings: Settings, stored_key: KeyLookup | None) -> Provider | None:
    """The decision layer's own provider: `[actions] provider`, or the Mind's `[provider]`
    with `[actions] model` (its `[[provider.models]]` entries apply); None when the stages
    share the Mind's. ProviderConfigError, naming the setting, when it cannot work."""
    actions = settings.actions
    if actions.provider is not None:
        return own_provider("[actions] provider", actions.provider, stored_key, settings)
    if actions.model:
        chosen = settings.provider.model_copy(update={"model": actions.model})
        return own_provider(f"[actions] model {actions.model!r}", chosen, stored_key, settings)
    return None


def own_provider(
    name: str, provider: ProviderSettings, stored_key: KeyLookup | None, settings: Settings
) -> Provider:
    """The provider a component has of its own; ProviderConfigError naming the setting `name`
    and what to fix. A self-hosted model's window is remembered in the data directory."""
    try:
        return build_provider(provider, stored_key=stored_key, cache_dir=settings.data_dir)
    except (ProviderConfigError, ScriptError, ProviderKeyError) as exc:
        raise ProviderConfigError(f"{name}: {exc}") from None


def build(
    settings: Settings, provider: Provider, *, stored_key: KeyLookup | None = None
) -> MindApp:
    """Assemble every component; nothing touches the database until `MindApp.start`.

    ProfileError when `[profiles]` as a whole is wrong (a factory that does not import, two
    profiles with one name, a default that names none); ProviderConfigError when the
    Reviewer's or the decision layer's own provider is (`stored_key` gives them the key
    `tobe setup` stored)."""
    bus, live_calls = EventBus(), LiveCalls()

    def committed(events: list[OutboxEvent]) -> None:
        # Revocations cut their streams before any subscriber hears of the commit.
        live_calls.committed(events)
        bus.durable_committed(events)

    database = Database.open(
        settings.store_url,
        on_commit=committed,
        sqlite_synchronous=settings.store.sqlite_synchronous,
    )
    # One clock for every "now" of the Mind: the system's, or `[scheduler] clock_file`.
    clock = clock_from(settings.scheduler)
    # Every model request is recorded in the usage ledger, written in batches.
    ledger = UsageLedger(database)
    provider = MeteredProvider(provider, ledger.record)
    usage = UsageReports(database, Pricing.from_settings(settings), flush=ledger.flush)
    tools = ToolRegistry(builtin_tools(clock.now))
    for tool in memory_tools(Memory(database)):
        tools.add_builtin(tool)
    # Semantic recall, when `[recall] embeddings` names a provider.
    semantic = recall_semantic.configured(settings.recall, database, stored_key)
    tools.add_builtin(RecallTool(database, semantic))
    skills, resources = SkillStore(settings.skills.dirs), ResourceStore(settings.resources.dirs)
    tools.add_platform_source(skills, [VIEW_SKILL])
    tools.add_platform_source(resources, [READ_RESOURCE])
    widget_tools = WidgetToolSource(database)
    tools.add_platform_source(widget_tools, WIDGET_TOOLS)
    profiles = ProfileBook.from_settings(settings.profiles, tools.platform_names)
    # The keys of sealed runs, shared by everything that writes or reads their values.
    keyring = KeyRing(store_loader(database))
    reviewer = settings.approvals.reviewer
    own_reviewer = (
        MeteredProvider(
            own_provider("[approvals.reviewer] provider", reviewer.provider, stored_key, settings),
            ledger.record,
        )
        if reviewer.enabled and reviewer.provider is not None
        else None
    )
    approvals = Approvals.build(settings.approvals, database, provider, keyring, own_reviewer)
    runtime = ToolRuntime(approvals.authorizer)
    core = AgentCore(
        provider,
        tools,
        runtime,
        step_limit=settings.mind.step_limit,
        thinking=thinking_level(settings.provider),
        compaction=compaction_engine(settings.context, database, provider),
        catalog_sources=[skills, resources],
        clock=clock.now,
        time_zone_of=settings.scheduler.zone_of,
        conversation_notes=[widget_tools.note_for],
    )
    own_decider = decision_provider(settings, stored_key)
    if own_decider is not None:
        own_decider = MeteredProvider(own_decider, ledger.record)
    decisions = DecisionLayer(
        own_decider or provider, database, settings.actions, settings.scheduler, clock=clock
    )
    manager = ConversationManager(
        database,
        core,
        settings.mind,
        bus=bus,
        profiles=profiles,
        keyring=keyring,
        clock=clock,
        decisions=decisions,
        usage=usage,
    )
    widget_tools.post = lambda key, text, idempotency_key, card: manager.messages.post(
        key, text, idempotency_key, posted_by=WIDGET_POSTER, widget=card.to_payload()
    )
    app = MindApp(
        settings,
        database,
        bus,
        tools,
        runtime,
        provider,
        core,
        manager,
        live_calls=live_calls,
        usage=usage,
        widget_tools=widget_tools,
    )
    # Started first and stopped last: the runs' and reviews' rows are written at the stop.
    app.on_start.append(ledger.start)
    app.on_stop.append(ledger.close)
    app.on_start.append(widget_tools.start)
    # The recall index follows the outbox in the background, never on a turn's path.
    manager.conversations.semantic = semantic
    indexer = RecallIndexer(database, bus, embed=semantic.step if semantic else None)
    app.on_start.append(indexer.start)
    app.on_stop.append(indexer.close)
    notes = BackgroundNotes(database)
    app.remote = RemoteExecution.build(
        database,
        settings.remote,
        audience=manager.actors.audience_of,
        background_sink=notes.deliver,
        active_hand=manager.actors.active_hand_of,
        keyring=keyring,
        image_limits=ImageLimits(settings.mind.max_image_bytes, settings.mind.max_images),
    )
    tools.add_source(app.remote.tools)
    runtime.ledger = app.remote.ledger
    if settings.delegate.enabled:
        children = ChildRuns(database, manager.actors, bus, approvals.broker)
        tools.add_builtin(DelegateTool(children, tools, profiles, settings.delegate))
        runtime.ledger = Ledgers([app.remote.ledger, children])
    app.services.append(app.remote.service_spec())
    attach_content(app, skills, resources)
    app.on_start.append(app.remote.start)
    app.on_stop.append(app.remote.close)
    app.on_start.append(lambda: approvals.start(manager.actors.continue_call))
    if settings.delegate.enabled:
        app.on_start.append(children.sweep)
    manager.actors.on_adopted = approvals.continuation.adopted
    app.on_stop.append(approvals.close)
    if own_decider is not None:
        app.on_stop.append(own_decider.aclose)
    # Codes and sign-outs on the Mind's clock; a signed-out device's streams end at once.
    pairing = Pairing(database, now=clock.now, disconnect=live_calls.revoke)
    servicer = MindServicer(
        manager,
        database,
        bus,
        app.authenticate_client,
        approvals=approvals,
        pairing=pairing,
        revocation_reports=app.revocation_reports,
    )
    served: mind_pb2_grpc.MindServicer = servicer
    if not is_sqlite(settings.store_url):
        served = share_store(app, servicer, approvals)
    register = lambda server: mind_pb2_grpc.add_MindServicer_to_server(served, server)  # noqa: E731
    app.services.append(ServiceSpec(MIND_SERVICE, register))
    attach_management(app)
    scheduler = attach_scheduler(app, manager.messages.deliver_firing, clock)
    expiry = PendingExpiry(database)
    scheduler.add_deadlines(expiry)
    if app.shared is not None:
        scheduler.serves = expiry.serves = app.shared.leases.serves
    attach_awareness(app)
    return app


def share_store(
    app: MindApp, servicer: MindServicer, approvals: Approvals
) -> mind_pb2_grpc.MindServicer:
    """Join the Minds that share the PostgreSQL store: leases fence the writes, the others'
    commits wake this Mind's subscribers, and `servicer`'s conversation calls go to their
    owner (`mind.api.forwarding`); returns the servicer to serve."""
    # Imported here: a Mind on SQLite never loads the PostgreSQL driver.
    from mind.api.forwarding import Forwarder, peer_tls
    from mind.cluster.leases import SharedLeases
    from mind.cluster.membership import Membership, libpq_url, node_id_of
    from mind.cluster.shared import SharedStore
    from mind.events.relay import LIVE_CHANNEL, Relay
    from mind.remote.directory import HANDS_CHANNEL, HandDirectory
    from mind.remote.signals import TASKS_CHANNEL, TaskSignals

    mind = app.settings.mind
    node_id = node_id_of(mind.node_id, app.settings.data_dir)
    leases = SharedLeases(app.database, node_id, mind.lease_seconds)
    leases.on_lost = app.manager.actors.lost
    leases.on_orphaned = app.manager.actors.adopt
    app.manager.actors.leases = leases
    url = app.settings.store_url
    relay = Relay(libpq_url(url), node_id, app.bus)
    app.database.share(node_id, leases.fence, settle=relay.drained)
    app.on_start.append(relay.start)
    app.on_stop.append(relay.close)
    heard: dict[str, Callable[[str], None]] = {LIVE_CHANNEL: relay.heard}
    if app.remote is not None:
        directory = HandDirectory(app.database, node_id, mind.lease_seconds)
        crossing = app.remote.share(directory, TaskSignals(app.database, node_id))
        heard |= {HANDS_CHANNEL: directory.heard, TASKS_CHANNEL: crossing.heard}
    membership = Membership(url, node_id, on_outbox=app.bus.durable_committed, heard=heard)
    app.shared = SharedStore(membership, leases)
    forwarder = Forwarder(
        leases,
        node_id,
        lease_seconds=mind.lease_seconds,
        adopt=app.manager.actors.adopt,
        tls=peer_tls(mind.tls),
        keys={"DecideApproval": lambda request: approvals.conversation_of(request.approval_id)},
    )
    app.on_stop.append(forwarder.close)
    return forwarder.routing(servicer)


def attach_content(app: MindApp, skills: SkillStore, resources: ResourceStore) -> None:
    """Load skills and resources at start, then keep them current until the stop."""
    watcher = DirectoryWatcher([skills, resources])

    async def start() -> None:
        skills.reload()
        resources.reload()
        await watcher.start()

    app.on_start.append(start)
    app.on_stop.append(watcher.stop)


async def serve(app: MindApp, listen: str, tls: ServerTls | None = None) -> None:
    """Start `app` on `listen`, publish and say where it listens, and stop it at SIGTERM or
    SIGINT; BindError when `listen` cannot be bound."""
    server = None
    try:
        server = await app.start(listen, tls)
        line = f"mind listening on {app.address}"
        if tls is not None:
            log.info("TLS on %s; %s", listen, client_certificates(tls))

        def ready() -> None:
            # Supervisors and tests wait for this line (the real port when listening on port 0).
            print(line, flush=True)
            log.info(line)

        published_tls = app.settings.mind.tls if tls is not None else None
        with published_address(app.settings.data_dir, "mind", app.address, published_tls):
            await run_until_signal(lambda: app.close(server), ready=ready)
        server = None
    finally:
        if server is not None:
            await app.close(server)
