"""One supervised client session per MCP server, on the official `mcp` SDK.

`ServerSession.run` connects (a stdio server is started, in the sandbox unless the config
says otherwise; a remote one is reached over streamable HTTP with its headers), initializes,
lists the tools and declares them through `declare`; then it pings the server every few
seconds and lists the tools again on `notifications/tools/list_changed`. When the server ends
or stops answering, its tools are withdrawn (`declare` with none) and it is started again
after a backoff of 1 s doubling to 30 s, reset once a session is up.

A call (`call`) runs on the current session: progress notifications become the Hand task's
progress, the config's `timeout` bounds it, and a cancelled or timed-out call sends MCP's
`notifications/cancelled` (the SDK does, for any request it abandons). Env values and headers
are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import REQUEST_TIMEOUT

from hand._progress import report_progress
from hand._tools import SchemaTool, ToolError, ToolOutput
from hand.mcp.config import ServerConfig
from hand.mcp.results import result_output
from hand.mcp.tools import hand_tools, unknown_names
from hand.sandbox import Sandbox
from tobe.runtime.backoff import Backoff

log = logging.getLogger(__name__)

# Seconds between pings that tell a quiet server is still there, and how long one may take.
PING_INTERVAL = 2.0
PING_TIMEOUT = 10.0
# Bounds connecting, initializing and listing the tools.
CONNECT_TIMEOUT = 60.0

# Declares a server's Hand tools from now on (none: withdrawn).
Declare = Callable[[str, list[SchemaTool]], None]
Streams = Any  # the SDK's transport stream pair


class ServerSession:
    def __init__(self, name: str, config: ServerConfig, declare: Declare, sandbox: Sandbox):
        self.name = name
        self.config = config
        self._declare = declare
        self._sandbox = sandbox
        self._session: ClientSession | None = None
        self._tools_changed = asyncio.Event()
        # The last HTTP error status of a remote server: the SDK's own error does not name it.
        self._http_problem: str | None = None
        # Set once the first attempt to connect ended, up or not.
        self.first_attempt = asyncio.Event()
        # What the config names that the server's last tool list lacks (see `unknown_names`):
        # the Hand's start refuses it; once the start is past (`started`), it is logged.
        self.unknown: str | None = None
        self.started = False

    # -- supervising ----------------------------------------------------------------------

    async def run(self) -> None:
        """Keep the server connected until cancelled."""
        backoff = Backoff()
        while True:
            self._http_problem = None
            try:
                await self._session_until_lost(backoff)
                why = "the session ended"
            except Exception as exc:
                why = self._http_problem or _describe(exc)
            finally:
                self._session = None
                self._declare(self.name, [])
                self.first_attempt.set()
            delay = backoff.next_delay()
            log.warning("MCP server %s: %s; restarting in %.1fs", self.name, why, delay)
            await asyncio.sleep(delay)

    async def _session_until_lost(self, backoff: Backoff) -> None:
        async with contextlib.AsyncExitStack() as stack:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=self._on_message)
                )
                await session.initialize()
                count = await self._list_tools(session)
            self._session = session
            backoff.reset()
            self.first_attempt.set()
            log.info("MCP server %s: up, %d tools", self.name, count)
            await self._watch(session)

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[Streams]:
        if self.config.url is not None:
            client = httpx2.AsyncClient(
                headers=self.config.headers,
                timeout=httpx2.Timeout(30.0, read=300.0),
                event_hooks={"response": [self._on_response]},
            )
            async with (
                client,
                streamable_http_client(self.config.url, http_client=client) as streams,
            ):
                yield streams
            return
        async with stdio_client(self._stdio_parameters()) as streams:
            yield streams

    def _stdio_parameters(self) -> StdioServerParameters:
        assert self.config.command is not None
        argv = [self.config.command, *self.config.args]
        sandbox = self.config.sandbox
        if sandbox is False:
            return StdioServerParameters(
                command=argv[0], args=argv[1:], env=self.config.env, cwd=self.config.cwd
            )
        cwd = self.config.cwd or (sandbox.read_write[0] if sandbox.read_write else Path("/"))
        confined = Sandbox(self._sandbox.bwrap, allow_network=sandbox.network)
        full = confined.server_argv(argv, sandbox.read_write, sandbox.read_only, cwd)
        return StdioServerParameters(command=full[0], args=full[1:], env=self.config.env)

    async def _watch(self, session: ClientSession) -> None:
        """Return when the server is gone; list the tools again when they changed."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(PING_INTERVAL):
                    await self._tools_changed.wait()
            if self._tools_changed.is_set():
                self._tools_changed.clear()
                count = await self._list_tools(session)
                log.info("MCP server %s: tools changed, now %d", self.name, count)
                continue
            async with asyncio.timeout(PING_TIMEOUT):
                await session.send_ping()

    async def _list_tools(self, session: ClientSession) -> int:
        listed: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            listed += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        unknown = unknown_names(self.config, listed)
        if self.started and unknown is not None and unknown != self.unknown:
            log.warning("MCP server %s: %s", self.name, unknown)
        self.unknown = unknown
        tools = hand_tools(self.name, self.config, listed, self.call)
        self._declare(self.name, tools)
        return len(tools)

    async def _on_response(self, response: httpx2.Response) -> None:
        if response.status_code < 400:
            return
        # Without the query, where some servers take a key.
        url = response.request.url.copy_with(query=None)
        problem = f"HTTP {response.status_code} from {url}"
        if response.status_code in (401, 403):
            problem += "; check the server's `headers` in the MCP servers file"
        self._http_problem = problem

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed.set()
        elif isinstance(message, Exception):
            log.warning("MCP server %s: %s", self.name, _describe(message))

    # -- calls ----------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutput:
        """Call the server's tool `tool`; the text the model sees, or ToolError."""
        session = self._session
        if session is None:
            raise ToolError(f"MCP server {self.name} is not running (it is being restarted)")
        # Progress arrives on the session's own task: report it in this call's context.
        context = contextvars.copy_context()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            fraction = min(max(progress / total, 0.0), 1.0) if total else None
            text = message or (f"{progress:g} of {total:g}" if total else f"{progress:g}")
            context.run(report_progress, text, fraction)

        try:
            result = await session.call_tool(
                tool,
                arguments,
                read_timeout_seconds=self.config.timeout,
                progress_callback=on_progress,
            )
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise ToolError(
                    f"MCP server {self.name}: {tool} did not finish within "
                    f"{self.config.timeout:g} s (the server was told to cancel it)"
                ) from None
            raise ToolError(f"MCP server {self.name}: {exc}") from None
        return result_output(result)


def _describe(exc: BaseException) -> str:
    """One line about a failure; an exception group is described by its first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return f"{type(exc).__name__}: {exc}"
