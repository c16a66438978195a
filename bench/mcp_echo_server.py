"""An MCP server over stdio with one `echo` tool, built with the official MCP Python SDK: the
baseline peer of `bench_hand_vs_mcp.py`."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
async def echo(text: str = "") -> str:
    """Returns the text."""
    return text


if __name__ == "__main__":
    server.run("stdio")
