"""`tobe channels serve`: the channels process (`face.channels.process`)."""

from __future__ import annotations

import asyncio

import click

from tobe.config import load_settings
from tobe.runtime.import_pause import collector_paused
from tobe.runtime.logs import configure_logging
from tobe.runtime.private_files import private_umask


class NoChannelEnabled(click.ClickException):
    """Nothing to run: a configuration problem, not a failure (`tobe up` starts this process
    only when a channel is enabled)."""

    exit_code = 2


@click.group("channels")
def channels() -> None:
    """The channels process: the agent reached on Matrix and by email."""


@channels.command("serve")
def serve() -> None:
    """Run every enabled channel until SIGTERM or Ctrl-C; a channel that fails is started
    again after 1 s, doubling to 30 s."""
    with collector_paused():
        from face.channels.networks import enabled_networks
        from face.channels.process import serve as run_server
        from face.face_address import face_endpoint
        from tobe.runtime.probe_answer import ProbeListenError

    settings = load_settings()
    configure_logging(settings.log_level, process="channels", format=settings.log.format)
    private_umask()
    networks = enabled_networks(settings.channels)
    if not networks:
        raise NoChannelEnabled(
            "no channel is enabled: set enabled = true in [channels.matrix] or "
            "[channels.email] of the configuration (see docs/channels.md)"
        )
    face = face_endpoint(settings)
    try:
        asyncio.run(run_server(settings, networks, face))
    except ProbeListenError as exc:
        raise click.ClickException(f"{exc} (channels.probe_listen)") from None
