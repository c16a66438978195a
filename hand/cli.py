"""`tobe hand …`: run the reference Hand against a Mind."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import click

from hand._conformance import add_conformance_tools
from hand._hand import HandRefused
from hand.check.scenarios import SCENARIOS
from hand.health import HealthListenError
from tobe.config import load_settings
from tobe.runtime import tokens
from tobe.runtime.addresses import address_of
from tobe.runtime.import_pause import collector_paused
from tobe.runtime.logs import configure_logging
from tobe.telemetry import setup as telemetry_setup
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
@click.option(
    "--mind",
    "mind_address",
    help="Mind address (host:port or unix:/path); default: hand.mind_address if set, else "
    "where the Mind of this data directory published it, else 127.0.0.1:7410.",
)
@click.option(
    "--name",
    help="Hand name; its tools appear as <name>__<tool>. With --mcp, default the top-level "
    "`name` of that file (one of the two is required).",
)
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
@click.option(
    "--conformance",
    is_flag=True,
    help="Also declare the conformance tools `tobe hand check` drives.",
)
@click.option(
    "--mcp",
    "mcp_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also offer the tools of the MCP servers this mcpServers JSON file names (without "
    "--workspace: only those), as <server>__<tool>.",
)
@click.option(
    "--web-allow",
    "web_allowed",
    multiple=True,
    help="A host (or *.domain) or address/CIDR the web tools may reach although it is not "
    "public (repeatable; adds to hand.web.allow).",
)
@click.option("--search-url", help="The SearXNG instance web_search asks (hand.web.search_url).")
@click.option(
    "--browser/--no-browser",
    default=None,
    help="Offer the browser tools (Chromium through Playwright; hand.web.browser).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Take the name over from a live Hand holding it (of the same principal), which then "
    "stops; without it, a name in use is refused.",
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
    conformance: bool,
    mcp_file: Path | None,
    web_allowed: tuple[str, ...],
    search_url: str | None,
    browser: bool | None,
    replace: bool,
    tls: TlsOptions,
) -> None:
    """Run the reference Hand: workspace file tools, allowed commands and web tools.

    Over TLS with --ca (or a tls://host:port address, trusting the system roots); with
    --cert and --key it presents a client certificate (a Mind that requires them: mTLS).
    With --mcp it also starts the MCP servers of that file and offers their tools.
    """
    with collector_paused():
        from hand.server import (
            HandConfigError,
            build,
            build_mcp,
            build_web,
            load_mcp,
            mcp_hand_name,
        )
        from hand.server import serve as run

    settings = load_settings()
    configure_logging(settings.log_level, process="hand", format=settings.log.format)
    telemetry_setup.configure(settings.telemetry, "hand")
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
    config.web.allow += list(web_allowed)
    if search_url is not None:
        config.web.search_url = search_url
    if browser is not None:
        config.web.browser = browser
    try:
        servers = load_mcp(mcp_file) if mcp_file is not None else None
        if servers is not None and mcp_file is not None:
            config.name = mcp_hand_name(name, servers, mcp_file)
        reference = build(config) if config.workspace is not None or servers is None else None
        mcp = build_mcp(config, servers, reference) if servers is not None else None
    except HandConfigError as exc:
        raise click.ClickException(str(exc)) from None
    hand = mcp.hand if mcp is not None else reference
    assert hand is not None
    web = build_web(config, reference) if reference is not None else None
    if conformance:
        add_conformance_tools(hand)
    token = _token(token_file, settings.credentials_dir)
    target = mind_address or address_of(settings.data_dir, "mind", config, "mind_address")
    address, channel_tls = tls.resolve(config.tls, target, "hand.tls")
    try:
        served = run(
            hand,
            address,
            token,
            health_listen,
            channel_tls,
            mcp,
            replace=replace,
            probe_listen=config.probe_listen,
        )
        asyncio.run(served if web is None else web.closing(served))
    except (HandRefused, HandConfigError) as exc:
        raise click.ClickException(str(exc)) from None
    except HealthListenError as exc:
        raise click.ClickException(str(exc)) from None


@hand_group.command("check")
@click.option(
    "--listen",
    default="127.0.0.1:0",
    show_default=True,
    help="Where the check serves HandLink for the Hand under test (port 0: any free port).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the one-time Hand credential here (mode 0600) instead of printing it.",
)
@click.option(
    "--timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds to wait for the Hand to attach.",
)
@click.option(
    "--only",
    multiple=True,
    type=click.Choice([scenario.name for scenario in SCENARIOS]),
    help="Run only this scenario (repeatable).",
)
def check(listen: str, token_file: Path | None, timeout: float, only: tuple[str, ...]) -> None:
    """Check a Hand against the HandLink contract (hand.proto).

    Serves a scripted Mind, prints its address and a one-time credential, waits for your Hand
    (which must declare the conformance tools) to dial in, runs the scenarios and prints a
    pass/fail table. Exits 0 only when every scenario passes.
    """
    from hand.check.report import render
    from hand.check.runner import CheckAborted, run_check

    try:
        outcomes = asyncio.run(run_check(listen, token_file, timeout, only, click.echo))
    except CheckAborted as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(render(outcomes))
    if not all(outcome.passed for outcome in outcomes):
        raise SystemExit(1)
