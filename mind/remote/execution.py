"""Remote execution assembled: what the Mind's server wires in one place.

remote = RemoteExecution.build(
    database, settings.remote, audience=manager.actors.audience_of, background_sink=...
)
start_server([remote.service_spec(), ...])      # HandLink
tool sources: remote.tools                      # `<hand>__<tool>` for conversations
runtime.ledger = remote.ledger                  # a call with a task never runs twice
await remote.start()  ...  remote.begin_shutdown(); ...; await remote.close()

On a database several Minds share, `share` adds the directory of the Hands attached to the
others and the task signals between them (`mind.remote.crossing`) before the start.
"""

from __future__ import annotations

from dataclasses import dataclass

from mind.credentials.interceptor import current_identity
from mind.remote.authority import Authority, BackgroundSink
from mind.remote.crossing import TaskCrossing
from mind.remote.directory import HandDirectory
from mind.remote.hub import HandHub
from mind.remote.model import ImageLimits
from mind.remote.registry import Registry
from mind.remote.servicer import HandLinkServicer
from mind.remote.signals import TaskSignals
from mind.remote.taskservice import TaskService
from mind.remote.tools import ActiveHand, Audience, HandTaskLedger, HandToolSource
from mind.sealing.keyring import KeyRing
from mind.store.database import Database
from tobe.config import RemoteSettings
from tobe.runtime.server import ServiceSpec
from tobe.v1 import hand_pb2, hand_pb2_grpc

HANDLINK_SERVICE = hand_pb2.DESCRIPTOR.services_by_name["HandLink"].full_name


@dataclass
class RemoteExecution:
    hub: HandHub
    registry: Registry
    authority: Authority
    tasks: TaskService
    tools: HandToolSource
    ledger: HandTaskLedger
    servicer: HandLinkServicer
    # Set by `share` on a database several Minds share.
    directory: HandDirectory | None = None
    crossing: TaskCrossing | None = None

    @classmethod
    def build(
        cls,
        database: Database,
        settings: RemoteSettings,
        *,
        audience: Audience,
        background_sink: BackgroundSink | None = None,
        active_hand: ActiveHand = lambda _key: "",
        keyring: KeyRing | None = None,
        image_limits: ImageLimits | None = None,
    ) -> RemoteExecution:
        hub = HandHub()
        registry = Registry(database, keyring)
        authority = Authority(
            registry, hub, settings, background_sink=background_sink, image_limits=image_limits
        )
        tasks = TaskService(registry, authority, hub, settings)
        return cls(
            hub=hub,
            registry=registry,
            authority=authority,
            tasks=tasks,
            tools=HandToolSource(hub, authority, audience, active_hand),
            ledger=HandTaskLedger(authority),
            servicer=HandLinkServicer(hub, authority, tasks, settings, current_identity),
        )

    def service_spec(self) -> ServiceSpec:
        return ServiceSpec(
            HANDLINK_SERVICE,
            lambda server: hand_pb2_grpc.add_HandLinkServicer_to_server(self.servicer, server),
        )

    def share(self, directory: HandDirectory, signals: TaskSignals) -> TaskCrossing:
        """Offer the Hands attached to the other Minds, and signal task changes to them;
        returns what applies their signals here (it hears `signals.TASKS_CHANNEL`)."""
        self.directory = directory
        self.authority.directory = directory
        self.authority.signals = signals
        self.registry.signals = signals
        self.crossing = TaskCrossing(signals.node_id, self.hub, self.authority)
        return self.crossing

    async def start(self) -> None:
        """Time the open tasks left by an earlier run and start the Hands' grace periods
        (knowing first which Hands the other Minds hold)."""
        if self.directory is not None:
            await self.directory.start()
        await self.tasks.start()

    def begin_shutdown(self) -> None:
        """A stop leaves Hand tasks running; the next start takes their results."""
        self.authority.begin_shutdown()

    async def close(self) -> None:
        """End the Hand streams (they reconnect to the next Mind) and stop every timer."""
        await self.servicer.close()
        await self.tasks.close()
        if self.crossing is not None:
            await self.crossing.close()
        if self.directory is not None:
            await self.directory.close()
        await self.authority.close()
