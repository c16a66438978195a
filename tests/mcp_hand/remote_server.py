"""A small remote MCP server (streamable HTTP, the `mcp` SDK's MCPServer) for the MCP Hand's
tests: it requires `Authorization: Bearer <TOKEN>` and records what its tools saw."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

TOKEN = "remote-secret-token"
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
READ_ONLY = ToolAnnotations(read_only_hint=True)


@dataclass
class RemoteServer:
    url: str = ""
    # What the tools saw: "waiting", "cancelled".
    seen: list[str] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def note(self, what: str) -> None:
        with self._changed:
            self.seen.append(what)
            self._changed.notify_all()

    def wait_for(self, what: str, timeout: float = 30) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: what in self.seen, timeout)


def _app(record: RemoteServer) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    server = MCPServer("remote-test")

    @server.tool(annotations=READ_ONLY)
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    @server.tool(annotations=READ_ONLY)
    def refuse() -> str:
        """Always fails."""
        raise ToolError("the remote tool refuses")

    @server.tool(annotations=READ_ONLY)
    async def wait_forever(ctx: Context) -> str:
        """Never finishes on its own."""
        record.note("waiting")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            record.note("cancelled")
            raise
        return "never"

    @server.tool(annotations=READ_ONLY)
    async def grow(ctx: Context) -> str:
        """Add the tool `extra` and tell the client the tools changed."""

        def extra() -> str:
            """A tool that came later."""
            return "extra here"

        server.add_tool(extra, annotations=READ_ONLY)
        await ctx.session.send_tool_list_changed()
        return "grown"

    inner = server.streamable_http_app()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers", []))
            if headers.get(b"authorization") != f"Bearer {TOKEN}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await inner(scope, receive, send)

    return app


def start_remote_server() -> tuple[RemoteServer, Callable[[], None]]:
    """Serve on a loopback port 0 in a thread; returns it and how to stop it."""
    record = RemoteServer()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    record.url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    server = uvicorn.Server(uvicorn.Config(_app(record), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()

    def stop() -> None:
        server.should_exit = True
        thread.join(15)
        sock.close()

    return record, stop
