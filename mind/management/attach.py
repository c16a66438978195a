"""Serving Management from the running Mind: one call in `mind.server.build` plugs it in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from mind.awareness.health import AdapterReport
from mind.management.hosting import ManagementEndpoint, serve_management
from mind.management.live import MindLink
from mind.management.model_budget import model_budget
from mind.management.records import HandInfo, ServiceInfo
from mind.management.service import ManagementService
from tobe.config import Settings

if TYPE_CHECKING:
    from mind.server import MindApp


def mind_services(settings: Settings, mind_address: str) -> list[ServiceInfo]:
    """What a running Mind serves and reaches, as configured."""
    awareness = settings.mind.awareness_address
    provider = settings.provider
    return [
        ServiceInfo("mind", mind_address or "-", "serving" if mind_address else "starting"),
        ServiceInfo("management", f"unix:{settings.management_socket}", "serving"),
        ServiceInfo("awareness", awareness or "-", "configured" if awareness else "not configured"),
        ServiceInfo(
            "provider",
            " ".join(part for part in (provider.kind, provider.model) if part) or "-",
            "configured" if provider.kind else "not configured",
        ),
    ]


def _decision_failures(app: MindApp) -> Callable[[], Mapping[str, int]]:
    layer = app.manager.decisions
    return (lambda: layer.failures) if layer is not None else dict


async def _no_adapters() -> AdapterReport:
    return AdapterReport()


def link_mind(app: MindApp) -> MindLink:
    """The Mind's Hands, event bus, conversations and services, as the service sees them."""
    remote = app.remote
    assert remote is not None, "attach management after the remote execution is built"

    def hands() -> list[HandInfo]:
        return [
            HandInfo(
                hand_id=connection.hand_id,
                name=connection.name,
                principal=connection.principal,
                tools=len(connection.tools),
                connected_at=connection.connected_at,
                version=connection.version,
            )
            for connection in remote.hub.connections()
        ]

    return MindLink(
        disconnect_credential=app.live_calls.revoke,
        revocation_reports=app.revocation_reports,
        hands=hands,
        gateway_subscribers=lambda: app.bus.subscriber_count,
        services=lambda: mind_services(app.settings, app.address),
        adapters=app.adapter_health or _no_adapters,
        forget_conversation=app.manager.actors.forget,
        compact_conversation=app.manager.runs.compact_for_operator,
        change_profile=app.manager.conversations.set_profile_for_operator,
        model_budget=lambda: model_budget(app.core, app.manager.actors.profiles),
        decision_failures=_decision_failures(app),
        widget_types_changed=(
            app.widget_tools.types_changed if app.widget_tools is not None else lambda: None
        ),
    )


def attach_management(app: MindApp) -> None:
    """Serve Management on the data directory's owner-only socket while the Mind runs.

    It starts with the Mind's other start hooks (after recovery, before the Mind's port opens)
    and stops first, removing the socket file (a killed Mind leaves it: the CLI sees it stale).
    """
    endpoint: ManagementEndpoint | None = None

    async def start() -> None:
        nonlocal endpoint
        service = ManagementService(
            app.database,
            database_url=app.settings.store_url,
            data_dir=app.settings.data_dir,
            profiles=app.settings.profiles,
            mind=link_mind(app),
            clock=app.manager.clock,
            usage=app.usage,
        )
        endpoint = await serve_management(service, app.settings.management_socket)

    async def stop() -> None:
        if endpoint is not None:
            await endpoint.stop()

    app.on_start.append(start)
    app.on_stop.append(stop)
