"""The MCP servers of a Hand: started with it, their tools declared on it, stopped with it.

Every change to a server's tools (it came up, it listed new ones, it went away) goes through
`McpHost.declare`, which replaces that server's tools among the Hand's; the Hand re-declares
its tools to the Mind at once when attached (`tools_changed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from hand._hand import Hand
from hand._tools import SchemaTool
from hand.mcp.config import McpConfig
from hand.mcp.servers import ServerSession
from hand.sandbox import SANDBOX_PATH, Sandbox

log = logging.getLogger(__name__)


class McpStartError(RuntimeError):
    """A server cannot start here: its program is missing, or the sandbox it should run in
    cannot run."""


class McpHost:
    def __init__(self, hand: Hand, config: McpConfig, sandbox: Sandbox) -> None:
        self.hand = hand
        self.sessions = {
            name: ServerSession(name, server, self.declare, sandbox)
            for name, server in config.servers.items()
        }
        self._sandbox = sandbox
        self._declared: dict[str, list[str]] = {}
        self._jobs: list[asyncio.Task[None]] = []

    def declare(self, server: str, tools: list[SchemaTool]) -> None:
        """`server`'s tools from now on, replacing those it had (none: withdrawn); the Hand
        tells the Mind while attached (`tools_changed`)."""
        mine = set(self._declared.pop(server, []))
        others = [tool for name, tool in self.hand.tools.items() if name not in mine]
        taken = {tool.name for tool in others}
        kept: list[SchemaTool] = []
        for tool in tools:
            if tool.name in taken:
                log.warning(
                    "MCP server %s: tool %s left out: the Hand already has a tool of that name",
                    server,
                    tool.name,
                )
                continue
            kept.append(tool)
            taken.add(tool.name)
        self._declared[server] = [tool.name for tool in kept]
        self.hand.replace_tools([*others, *kept])

    def check(self) -> None:
        """Refuse to start when a local server's program is missing, or when a server should
        be sandboxed and the sandbox cannot run here (McpStartError, one line)."""
        for name, session in self.sessions.items():
            config = session.config
            if config.command is None:
                continue
            path = SANDBOX_PATH if config.sandbox is not False else os.environ.get("PATH")
            if shutil.which(config.command, path=path) is None:
                where = "in the sandbox's PATH " if config.sandbox is not False else ""
                raise McpStartError(
                    f"MCP server {name}: program {config.command!r} not found {where}"
                    f"({path}); give its full path (inside a directory of `sandbox.read_only`)"
                )
        self._check_sandbox()

    def _check_sandbox(self) -> None:
        confined = [
            name
            for name, session in self.sessions.items()
            if not session.config.remote and session.config.sandbox is not False
        ]
        if not confined:
            return
        with tempfile.TemporaryDirectory() as probe_dir:
            problem = self._sandbox.probe(Path(probe_dir))
        if problem is not None:
            raise McpStartError(
                f"MCP server {confined[0]} runs in the sandbox, which cannot run here: "
                f"{problem}; install bubblewrap (apt-get install bubblewrap) with user "
                'namespaces enabled, or set "sandbox": false for that server'
            )

    async def start(self, wait: float) -> None:
        """Start every server and wait (at most `wait` seconds) for each first attempt, so
        the Hand declares the tools of the servers that came up when it attaches.

        A server whose tools lack a name its `allow`, `hide` or `tools` gives stops the start
        (McpStartError, one line). One that lists its tools only later (it came up after the
        wait, or its tools changed) cannot stop a Hand already serving: it logs a warning."""
        self._jobs = [asyncio.create_task(session.run()) for session in self.sessions.values()]
        firsts = [session.first_attempt.wait() for session in self.sessions.values()]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                await asyncio.gather(*firsts)
        for name, session in self.sessions.items():
            if session.unknown is not None:
                await self.stop()
                raise McpStartError(f"MCP server {name}: {session.unknown}")
        for session in self.sessions.values():
            session.started = True

    async def stop(self) -> None:
        for job in self._jobs:
            job.cancel()
        for job in self._jobs:
            with contextlib.suppress(asyncio.CancelledError):
                await job
        self._jobs = []
