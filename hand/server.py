"""Wiring of the reference Hand: `build` makes it from the `[hand]` settings (workspace, tools,
command sandbox), `build_web` adds the web tools `hand.web` turns on, `build_mcp` adds the MCP
servers of a `--mcp` file (to it, or to a Hand of their tools only), `serve` keeps it attached
to the Mind until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from hand._hand import Hand
from hand.health import HealthEndpoint
from hand.mcp.config import McpConfig, McpConfigError, load_config
from hand.reference import ReferencePolicy, build_reference_hand
from hand.sandbox import Confinement, Sandbox, Unconfined
from tobe import __version__
from tobe.config import HandSettings
from tobe.runtime.tls import ClientTls

if TYPE_CHECKING:
    from hand.mcp.host import McpHost
    from hand.web.tools import WebTools

log = logging.getLogger(__name__)


class HandConfigError(RuntimeError):
    """The Hand cannot start with this configuration; the message says what to fix."""


def _confinement(config: HandSettings, workspace: Path, runs_commands: bool) -> Confinement | None:
    """The sandbox, checked to work here; where it does not, unconfined commands when the
    operator opted in, None (no `run_command`) when told to withhold it, else a refusal."""
    sandbox = Sandbox(config.bwrap, allow_network=config.allow_command_network)
    if not runs_commands:
        return sandbox  # nothing will run in it, so it need not work here
    problem = sandbox.probe(workspace)
    if problem is None:
        network = "with" if config.allow_command_network else "without"
        log.info("commands run in a sandbox that sees only %s, %s network", workspace, network)
        return sandbox
    if config.allow_unconfined_commands:
        log.warning(
            "COMMANDS RUN UNCONFINED (--allow-unconfined-commands): they can read and change "
            "anything this user can, not only %s. No sandbox: %s",
            workspace,
            problem,
        )
        return Unconfined()
    if config.withhold_commands_without_sandbox:
        log.warning(
            "run_command is withheld (not offered): commands cannot be sandboxed on this "
            "machine: %s. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) with "
            "user namespaces enabled, or allow unconfined commands "
            "(TOBE_HAND__ALLOW_UNCONFINED_COMMANDS=true).",
            problem,
        )
        return None
    raise HandConfigError(
        f"commands cannot be sandboxed on this machine: {problem}\n"
        "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) with user namespaces "
        "enabled, or set TOBE_HAND__BWRAP to its path. Where the machine or container "
        "already is the boundary, start with --allow-unconfined-commands "
        "(TOBE_HAND__ALLOW_UNCONFINED_COMMANDS=true) to run commands without a sandbox."
    )


def build(config: HandSettings) -> Hand:
    """The reference Hand: workspace file tools and the allowed commands."""
    root = config.workspace
    if root is None:
        raise HandConfigError("no workspace: pass --workspace or set TOBE_HAND__WORKSPACE")
    if not root.is_dir():
        raise HandConfigError(f"workspace {root} is not a directory")
    confinement = _confinement(
        config,
        root.resolve(),
        runs_commands=bool(config.allowed_commands) and not config.read_only,
    )
    return build_reference_hand(
        config.name,
        root,
        read_only=config.read_only,
        require_binding=config.require_binding,
        allowed_commands=config.allowed_commands,
        command_timeout=config.command_timeout,
        max_output_bytes=config.max_output_bytes,
        version=__version__,
        confinement=confinement,
        run_commands=confinement is not None,
    )


def build_web(config: HandSettings, hand: Hand) -> WebTools:
    """Declare the web tools `hand.web` turns on (`web_fetch` by default, `web_search` with a
    SearXNG address, the browser tools when enabled) on `hand`."""
    from hand.web.tools import WebTools

    tools = WebTools(config.web)
    tools.declare(hand)
    offered = sorted(name for name in hand.tools if name.startswith(("web_", "browser_")))
    log.info("web tools: %s", ", ".join(offered) or "none")
    return tools


# Seconds the Hand waits for its MCP servers' first start before it attaches, so its hello
# declares their tools (those of a server still starting are declared when it is up).
MCP_START_WAIT = 60.0


def load_mcp(mcp_file: Path) -> McpConfig:
    """The `--mcp` file, checked (HandConfigError: one line naming the file and key)."""
    try:
        return load_config(mcp_file)
    except McpConfigError as exc:
        raise HandConfigError(str(exc)) from None


def mcp_hand_name(name: str | None, servers: McpConfig, mcp_file: Path) -> str:
    """The name of a Hand hosting MCP servers: `--name`, else the file's `name`. Never the
    `local` default: a second Hand under that name would collide with the reference Hand
    `tobe up` starts."""
    chosen = name or servers.name
    if not chosen:
        raise HandConfigError(
            f'this Hand needs a name: pass --name NAME or add a top-level "name" to {mcp_file}'
        )
    return chosen


def build_mcp(config: HandSettings, servers: McpConfig, hand: Hand | None) -> McpHost:
    """The MCP servers of a `--mcp` file, declaring their tools on `hand` (None: on a Hand of
    their tools only, with the reference Hand's read-only mode and binding rule)."""
    # The mcp SDK takes most of a second to import: only a Hand hosting MCP servers pays it,
    # not every reference Hand `tobe up` starts.
    from hand.mcp.host import McpHost, McpStartError

    if hand is None:
        hand = Hand(config.name, version=__version__, require_binding=config.require_binding)
        policy = ReferencePolicy(config.read_only)
        target = hand
        target.policy = lambda offer: policy(
            offer, {t.name: t.effect for t in target.tools.values()}
        )
    host = McpHost(hand, servers, Sandbox(config.bwrap))
    try:
        host.check()
    except McpStartError as exc:
        raise HandConfigError(str(exc)) from None
    return host


async def serve(
    hand: Hand,
    mind_address: str,
    token: str,
    health_listen: str | None,
    tls: ClientTls | None = None,
    mcp: McpHost | None = None,
    replace: bool = False,
    probe_listen: str = "",
) -> None:
    """Serve until SIGTERM/SIGINT; a refusal by the Mind ends with an error (`HandRefused`).

    With `mcp`, its servers start first (a signal while they start stops them too). With
    `replace`, the Hand takes its name over from a live Hand holding it. Whether it is
    attached is served on `health_listen` (gRPC health) and `probe_listen` (one plain line)."""
    loop = asyncio.get_running_loop()
    serving = asyncio.create_task(
        _serve(hand, mind_address, token, health_listen, tls, mcp, replace, probe_listen)
    )
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, serving.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await serving


async def _serve(
    hand: Hand,
    mind_address: str,
    token: str,
    health_listen: str | None,
    tls: ClientTls | None,
    mcp: McpHost | None,
    replace: bool,
    probe_listen: str,
) -> None:
    health: HealthEndpoint | None = None
    try:
        if mcp is not None:
            from hand.mcp.host import McpStartError

            try:
                await mcp.start(MCP_START_WAIT)
            except McpStartError as exc:
                raise HandConfigError(str(exc)) from None
        if health_listen or probe_listen:
            health = await HealthEndpoint.start(hand, health_listen, probe_listen)
        await hand.serve(mind_address, token, tls=tls, replace=replace)
    finally:
        if health is not None:
            await health.stop()
        if mcp is not None:
            await mcp.stop()
