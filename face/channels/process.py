"""The channels process: every enabled channel run by the bridge, kept running, until SIGTERM.

It serves nothing but its health probe (`channels.probe_listen`, one plain line: SERVING once
every channel was started) and dials the Face as a client, the Face `tobe chat` would dial.
Its state (paired people, pairing codes, threads) is `<data_dir>/channels/state.db`.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from face.channels.bridge import FaceTarget, run_channel
from face.channels.keeper import Channel, ChannelKeeper
from face.channels.networks import Network
from face.channels.state import ChannelState
from face.channels.transport import Transport
from face.face_address import FaceEndpoint
from tobe.config import ChannelSettings, Settings
from tobe.runtime.probe_answer import ProbeAnswer
from tobe.runtime.server import run_until_signal
from tobe.runtime.tasks import cancel_and_wait

log = logging.getLogger(__name__)


async def serve(settings: Settings, networks: list[Network], face: FaceEndpoint) -> None:
    """Run `networks`' channels until SIGTERM/SIGINT. Raises ProbeListenError when the probe
    address cannot be served, before any channel starts."""
    sections = {network.name: network.settings(settings.channels) for network in networks}
    state = ChannelState.at(settings.data_dir)

    target = FaceTarget(address=face.address, tls=face.tls)

    async def run(name: str, transport: Transport) -> None:
        await run_channel(transport, sections[name], state, target)

    channels = [
        Channel(
            network.name,
            network.factory(settings.channels, state),
            account_secrets(sections[network.name]),
        )
        for network in networks
    ]
    keeper = ChannelKeeper(channels, run)
    listen = settings.channels.probe_listen
    try:
        probe = await ProbeAnswer.start(listen, keeper.status) if listen else None
    except BaseException:
        state.close()
        raise
    log.info(
        "running channels %s; the Face is %s (%s)",
        ", ".join(sections),
        face.address,
        face.source,
    )
    running = asyncio.create_task(keeper.run(), name="channels")

    async def stop() -> None:
        await cancel_and_wait(running)
        if probe is not None:
            await probe.stop()
        state.close()
        log.info("channels stopped")

    await run_until_signal(stop)


def account_secrets(section: ChannelSettings) -> tuple[str, ...]:
    """The account's password as configured, and as its password file holds it."""
    found: list[str] = []
    password = getattr(section, "password", None)
    if password is not None:
        found.append(password.get_secret_value())
    password_file: Path | None = getattr(section, "password_file", None)
    if password_file is not None:
        try:
            found.append(password_file.read_text().strip())
        except OSError:
            pass
    return tuple(secret for secret in found if secret)
