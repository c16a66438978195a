"""`tobe awareness …` commands."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from tobe.config import load_settings
from tobe.runtime.import_pause import collector_paused
from tobe.runtime.private_files import private_umask
from tobe.runtime.statelock import StateLockBusy


@click.group()
def awareness() -> None:
    """The Awareness process: environment adapters and the observation push."""


@awareness.command()
@click.option("--listen", help="Address to serve on (host:port or unix:/path).")
@click.option(
    "--adapters-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Extra directory scanned for third-party adapters.",
)
def serve(listen: str | None, adapters_dir: Path | None) -> None:
    """Serve the Awareness contract until SIGTERM/SIGINT."""
    with collector_paused():
        from awareness.server import serve as run
        from tobe.runtime.publishing import bind_failure
        from tobe.runtime.server import BindError
        from tobe.runtime.tokens import TokenUnavailable

    settings = load_settings()
    private_umask()
    if listen:
        settings.awareness.listen = listen
    if adapters_dir is not None:
        settings.awareness.adapters_dir = adapters_dir
    try:
        asyncio.run(run(settings))
    except (StateLockBusy, TokenUnavailable) as exc:
        raise click.ClickException(str(exc)) from exc
    except BindError as exc:
        raise click.ClickException(bind_failure(settings.data_dir, "awareness", exc)) from None
