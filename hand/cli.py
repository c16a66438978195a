"""`tobe hand …`: run the reference Hand against a Mind."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from pathlib import Path

import click

from hand._hand import Hand, HandRefused
from hand.health import HealthEndpoint, HealthListenError
from hand.reference import build_reference_hand
from hand.sandbox import Confinement, Sandbox, Unconfined
from tobe import __version__
from tobe.config import HandSettings, load_settings
from tobe.runtime import tokens
from tobe.runtime.logs import configure_logging

log = logging.getLogger(__name__)

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


def _confinement(
    config: HandSettings, workspace: Path, runs_commands: bool, allow_unconfined: bool
) -> Confinement:
    """The sandbox, checked to work here; unconfined commands only when the operator opted in."""
    sandbox = Sandbox(config.bwrap, allow_network=config.allow_command_network)
    if not runs_commands:
        return sandbox  # nothing will run in it, so it need not work here
    problem = sandbox.probe(workspace)
    if problem is None:
        network = "with" if config.allow_command_network else "without"
        log.info("commands run in a sandbox that sees only %s, %s network", workspace, network)
        return sandbox
    if not allow_unconfined:
        raise click.ClickException(
            f"commands cannot be sandboxed on this machine: {problem}\n"
            "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) with user namespaces "
            "enabled, or set TOBE_HAND__BWRAP to its path. Where the machine or container "
            "already is the boundary, start with --allow-unconfined-commands "
            "(TOBE_HAND__ALLOW_UNCONFINED_COMMANDS=true) to run commands without a sandbox."
        )
    log.warning(
        "COMMANDS RUN UNCONFINED (--allow-unconfined-commands): they can read and change "
        "anything this user can, not only %s. No sandbox: %s",
        workspace,
        problem,
    )
    return Unconfined()


async def _serve(hand: Hand, target: str, token: str, health_listen: str | None) -> None:
    """Serve until SIGTERM/SIGINT; a refusal by the Mind ends with an error."""
    loop = asyncio.get_running_loop()
    health = await HealthEndpoint.start(hand, health_listen) if health_listen else None
    serving = asyncio.create_task(hand.serve(target, token))
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, serving.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    finally:
        if health is not None:
            await health.stop()


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
def serve(
    mind_address: str | None,
    name: str | None,
    workspace: Path | None,
    token_file: Path | None,
    read_only: bool | None,
    allowed: tuple[str, ...],
    allow_unconfined_commands: bool,
    health_listen: str | None,
) -> None:
    """Run the reference Hand: workspace file tools and allowed commands."""
    settings = load_settings()
    configure_logging(settings.log_level, process="hand")
    config = settings.hand
    root = workspace or config.workspace
    if root is None:
        raise click.ClickException("no workspace: pass --workspace or set TOBE_HAND__WORKSPACE")
    if not root.is_dir():
        raise click.ClickException(f"workspace {root} is not a directory")
    read_only = config.read_only if read_only is None else read_only
    allowed_commands = list(allowed) or config.allowed_commands
    confinement = _confinement(
        config,
        root.resolve(),
        runs_commands=bool(allowed_commands) and not read_only,
        allow_unconfined=allow_unconfined_commands or config.allow_unconfined_commands,
    )
    hand = build_reference_hand(
        name or config.name,
        root,
        read_only=read_only,
        allowed_commands=allowed_commands,
        command_timeout=config.command_timeout,
        max_output_bytes=config.max_output_bytes,
        version=__version__,
        confinement=confinement,
    )
    token = _token(token_file, settings.credentials_dir)
    try:
        asyncio.run(_serve(hand, mind_address or config.mind_address, token, health_listen))
    except HandRefused as exc:
        raise click.ClickException(f"the Mind refused this Hand: {exc}") from None
    except HealthListenError as exc:
        raise click.ClickException(str(exc)) from None
