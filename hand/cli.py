"""`tobe hand …`: run the reference Hand against a Mind."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import click

from hand._hand import HandRefused
from hand.health import HealthListenError
from tobe.config import load_settings
from tobe.runtime import tokens
from tobe.runtime.logs import configure_logging
from tobe.tls_options import TlsOptions, tls_client_options

TOKEN_ENV = "TOBE_HAND_TOKEN"


def _token(token_file: Path | None, credentials_dir: Path) -> str:
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        return token
    path = token_file or tokens.token_file(credentials_dir, "hand")
    try:
        token = path.read_text().strip()
    except OSError:
        token = ""
    if not token:
        raise click.ClickException(
            f"no Hand credential: set {TOKEN_ENV} or pass --token-file "
            f"(create one with `tobe admin credentials create --kind hand`)"
        )
    return token


@click.group("hand")
def hand_group() -> None:
    """Hands: executors on this device that dial the Mind."""


@hand_group.command("serve")
@click.option("--mind", "mind_address", help="Mind address (host:port or unix:/path).")
@click.option("--name", help="Hand name; its tools appear as <name>__<tool>.")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory the workspace tools are confined to.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"File holding the Hand credential (or set {TOKEN_ENV}).",
)
@click.option("--read-only/--read-write", default=None, help="Refuse every tool that writes.")
@click.option(
    "--require-binding",
    is_flag=True,
    help="Reject every offer for a tool that is not read-only without an approval binding.",
)
@click.option(
    "--allow",
    "allowed",
    multiple=True,
    help="A program run_command may run (repeatable; replaces the configured list).",
)
@click.option(
    "--allow-unconfined-commands",
    is_flag=True,
    help="Where no sandbox can run, run commands unconfined instead of refusing to start.",
)
@click.option(
    "--health-listen",
    help="Also serve gRPC health here (host:port or unix:/path): SERVING while attached.",
)
@tls_client_options
def serve(
    mind_address: str | None,
    name: str | None,
    workspace: Path | None,
    token_file: Path | None,
    read_only: bool | None,
    require_binding: bool,
    allowed: tuple[str, ...],
    allow_unconfined_commands: bool,
    health_listen: str | None,
    tls: TlsOptions,
) -> None:
    """Run the reference Hand: workspace file tools and allowed commands.

    Over TLS with --ca (or a tls://host:port address, trusting the system roots); with
    --cert and --key it presents a client certificate (a Mind that requires them: mTLS).
    """
    from hand.server import HandConfigError, build
    from hand.server import serve as run

    settings = load_settings()
    configure_logging(settings.log_level, process="hand")
    config = settings.hand
    if name:
        config.name = name
    if workspace is not None:
        config.workspace = workspace
    if read_only is not None:
        config.read_only = read_only
    if require_binding:
        config.require_binding = True
    if allowed:
        config.allowed_commands = list(allowed)
    if allow_unconfined_commands:
        config.allow_unconfined_commands = True
    try:
        hand = build(config)
    except HandConfigError as exc:
        raise click.ClickException(str(exc)) from None
    token = _token(token_file, settings.credentials_dir)
    address, channel_tls = tls.resolve(config.tls, mind_address or config.mind_address, "hand.tls")
    try:
        asyncio.run(run(hand, address, token, health_listen, channel_tls))
    except HandRefused as exc:
        raise click.ClickException(f"the Mind refused this Hand: {exc}") from None
    except HealthListenError as exc:
        raise click.ClickException(str(exc)) from None
