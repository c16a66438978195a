"""The MCP servers file: the `mcpServers` format other MCP clients use, plus ToBe's keys.

    {"mcpServers": {
      "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
                                           "/home/me/notes"],
                "sandbox": {"read_write": ["/home/me/notes"], "network": true}},
      "tracker": {"url": "https://mcp.example.com/mcp",
                  "headers": {"Authorization": "Bearer …"}, "effect": "read_only"}}}

A server is local (`command`, `args`, `env`, `cwd`: run over stdio, in the sandbox unless
`"sandbox": false`) or remote (`url`, `headers`: the streamable HTTP transport). ToBe's keys:
`effect` (every tool of the server) and `tools.<name>.effect` override what the tools' hints
say; `allow` offers only the tools named, `hide` never the ones named; `timeout` bounds each
call (seconds); the top-level `name` names the Hand when `--name` does not. Errors name the
server and the key, never a value (env and headers hold secrets).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pydantic

from hand._tools import Effect

DEFAULT_TIMEOUT = 300.0


class McpConfigError(ValueError):
    """The MCP servers file cannot be used; one line naming the file, server and key."""


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class ToolOverride(_Strict):
    effect: Effect


class SandboxConfig(_Strict):
    """What a sandboxed stdio server sees besides the system's read-only files."""

    read_write: list[Path] = []
    read_only: list[Path] = []
    network: bool = False

    @pydantic.field_validator("read_write", "read_only")
    @classmethod
    def _absolute(cls, paths: list[Path]) -> list[Path]:
        for path in paths:
            if not path.is_absolute():
                raise ValueError(f"{str(path)!r} must be an absolute path")
        return paths


class ServerConfig(_Strict):
    # Local (stdio) servers.
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: Path | None = None
    sandbox: SandboxConfig | Literal[False] = SandboxConfig()
    # Remote servers (streamable HTTP).
    url: str | None = None
    headers: dict[str, str] = {}
    # ToBe's keys.
    effect: Effect | None = None
    tools: dict[str, ToolOverride] = {}
    allow: list[str] | None = None
    hide: list[str] = []
    timeout: float = pydantic.Field(DEFAULT_TIMEOUT, gt=0)
    # Accepted for compatibility with other clients' files ("stdio", "http", …): the keys
    # present decide the transport.
    type: str | None = None

    @pydantic.model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a local server) or `url` (a remote one)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("`url` must start with http:// or https://")
        return self

    @property
    def remote(self) -> bool:
        return self.url is not None

    def offers(self, tool: str) -> bool:
        """Whether the tool named `tool` (the server's name for it) is offered at all."""
        if tool in self.hide:
            return False
        return self.allow is None or tool in self.allow


class McpConfig(_Strict):
    # The Hand's name when `--name` is not given (the tools appear as <name>__<server>__<tool>).
    name: str | None = pydantic.Field(None, pattern=r"^[a-z][a-z0-9-]{0,14}$")
    servers: dict[str, ServerConfig] = pydantic.Field(alias="mcpServers")


# Where pydantic names the union member it tried (`sandbox` is an object or false); not a key.
_UNION_MEMBERS = {"SandboxConfig"}


def _where(location: tuple[int | str, ...]) -> str:
    parts = [str(part) for part in location if part not in _UNION_MEMBERS]
    if parts[:1] == ["mcpServers"] and len(parts) >= 2:
        key = ".".join(parts[2:]) or "(the server)"
        return f"server {parts[1]!r}, key {key}"
    return f"key {'.'.join(parts) or '(top level)'}"


def load_config(path: Path) -> McpConfig:
    """Read and check the file; McpConfigError says what is wrong in one line."""
    try:
        raw: Any = json.loads(path.read_text())
    except OSError as exc:
        raise McpConfigError(f"MCP servers file {path}: cannot read it: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"MCP servers file {path}: not JSON ({exc.msg} at line {exc.lineno})"
        ) from None
    try:
        config = McpConfig.model_validate(raw)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        message = first["msg"].removeprefix("Value error, ")
        raise McpConfigError(
            f"MCP servers file {path}: {_where(first['loc'])}: {message}"
        ) from None
    if not config.servers:
        raise McpConfigError(f"MCP servers file {path}: `mcpServers` names no server")
    return config
