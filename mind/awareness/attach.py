"""Plugs Awareness into a MindApp: the three tools, and the observation router task."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC
from functools import partial
from typing import TYPE_CHECKING

from mind.awareness.catalog import AdapterCatalog
from mind.awareness.client import AwarenessClient
from mind.awareness.errors import AwarenessLinkError
from mind.awareness.health import AdapterHealth, AdapterReport
from mind.awareness.images import NoteImages
from mind.awareness.router import ObservationRouter
from mind.awareness.sink import ConversationSink
from mind.awareness.tools import AwarenessToolSource
from mind.conversation.image_limits import source_bytes
from mind.credentials.local_user import local_user
from tobe.runtime.tokens import awareness_token

if TYPE_CHECKING:
    from mind.server import MindApp

log = logging.getLogger(__name__)

# Seconds `tobe admin status` waits for Awareness before it says Awareness did not answer.
STATUS_PATIENCE = 1.0


async def adapter_health(client: AwarenessClient) -> AdapterReport:
    """The adapters' health for `tobe admin status`; an unreachable Awareness is reported."""
    try:
        adapters = await client.adapters(patience=STATUS_PATIENCE)
    except AwarenessLinkError as exc:
        return AdapterReport(error=f"Awareness did not answer: {exc.status}: {exc.details}")
    return AdapterReport(
        tuple(
            AdapterHealth(
                instance=info.instance or info.name,
                adapter_id=info.adapter_id,
                state=info.state,
                last_error=info.last_error,
                restarts=info.restarts,
                next_restart_at=(
                    info.next_restart_at.ToDatetime(tzinfo=UTC)
                    if info.HasField("next_restart_at")
                    else None
                ),
            )
            for info in adapters
        )
    )


def attach_awareness(app: MindApp) -> None:
    """No-op unless `mind.awareness_address` is set."""
    settings = app.settings
    address = settings.mind.awareness_address
    if not address:
        return
    client = AwarenessClient(
        address,
        awareness_token(settings, create=True),
        max_media_bytes=source_bytes(settings.mind.max_image_bytes),
    )
    catalog = AdapterCatalog(client)
    app.tools.add_source(AwarenessToolSource(client, catalog))
    # Awareness tools reach only conversations nobody but their owner sees.
    app.tools.set_audience(app.manager.actors.audience_of)
    app.adapter_health = partial(adapter_health, client)
    if app.manager.decisions is not None:
        app.manager.decisions.adapters = catalog.text
    default_key = settings.mind.awareness_conversation
    images = NoteImages(
        client, max_bytes=settings.mind.max_image_bytes, max_count=settings.mind.max_images
    )
    sink = ConversationSink(
        app.manager,
        images,
        default_key=default_key,
        owner=settings.mind.awareness_owner or local_user(),
    )
    router = ObservationRouter(
        client, app.database, sink, default_conversation=default_key, conditions=app.scheduler
    )
    task: list[asyncio.Task[None]] = []

    async def start() -> None:
        await sink.ensure_default()
        task.append(asyncio.create_task(router.run(), name="awareness router"))
        log.info("routing observations from Awareness at %s", address)

    async def stop() -> None:
        for running in task:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
        await client.close()

    app.on_start.append(start)
    app.on_stop.append(stop)
