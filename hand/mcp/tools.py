"""MCP tools as Hand tools: names, effects, which tools are offered.

Names: `<server>__<tool>`, lowercased, every character outside [a-z0-9_] turned into `_`; a
name that does not fit the Hand's tool names ([a-z][a-z0-9_]{0,46}) or that two tools would
share is left out with a warning naming both, rather than offering a tool under a name the
model could confuse.

Effects, from the tool's annotations (hints from the server) unless the config overrides them
(`tools.<name>.effect`, then the server's `effect`):

- `readOnlyHint: true` → read_only (runs without approval under the default policy);
- `openWorldHint: false` and `destructiveHint: false` (adds to a closed, local world) →
  workspace_write;
- anything else, including no annotations at all (MCP's defaults are destructive and
  open-world) → external_side_effect.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import types

from hand._tools import TOOL_NAME, Effect, SchemaTool, ToolOutput
from hand.mcp.config import ServerConfig

log = logging.getLogger(__name__)

_OUTSIDE = re.compile(r"[^a-z0-9_]")
# The Hand's schema for a tool whose input schema is not usable as given.
_OBJECT: dict[str, Any] = {"type": "object"}

# Calls a server's tool (its own name) with arguments; returns the text the model sees.
CallTool = Callable[[str, dict[str, Any]], Awaitable[ToolOutput]]


def hand_tool_name(server: str, tool: str) -> str:
    return _OUTSIDE.sub("_", f"{server}__{tool}".lower())


def effect_of(config: ServerConfig, tool: types.Tool) -> Effect:
    override = config.tools.get(tool.name)
    if override is not None:
        return override.effect
    if config.effect is not None:
        return config.effect
    hints = tool.annotations
    if hints is None:
        return Effect.EXTERNAL_SIDE_EFFECT
    if hints.read_only_hint:
        return Effect.READ_ONLY
    if hints.open_world_hint is False and hints.destructive_hint is False:
        return Effect.WORKSPACE_WRITE
    return Effect.EXTERNAL_SIDE_EFFECT


def unknown_names(config: ServerConfig, listed: list[types.Tool]) -> str | None:
    """What the config's `allow`, `hide` and `tools` name that the server does not list (a
    typo would silently offer a tool meant to be hidden, or none of those meant to be
    allowed), as one clause; None when every name is listed."""
    names = {tool.name for tool in listed}
    parts = [
        f"`{key}` names {', '.join(repr(n) for n in unknown)}"
        for key, given in (
            ("allow", config.allow or []),
            ("hide", config.hide),
            ("tools", config.tools),
        )
        if (unknown := sorted(set(given) - names))
    ]
    if not parts:
        return None
    offered = ", ".join(sorted(names)) or "none"
    return f"{'; '.join(parts)}, which it does not list (it lists {offered})"


def hand_tools(
    server: str, config: ServerConfig, listed: list[types.Tool], call: CallTool
) -> list[SchemaTool]:
    """The Hand tools for the tools a server lists (those the config offers)."""
    made: dict[str, SchemaTool] = {}
    sources: dict[str, str] = {}
    for tool in listed:
        if not config.offers(tool.name):
            continue
        name = hand_tool_name(server, tool.name)
        if not TOOL_NAME.match(name):
            log.warning(
                "MCP server %s: tool %r left out: %r is not a valid tool name (%s)",
                server,
                tool.name,
                name,
                TOOL_NAME.pattern,
            )
            continue
        if name in made:
            log.warning(
                "MCP server %s: tools %r and %r would both be %s; %r left out",
                server,
                sources[name],
                tool.name,
                name,
                tool.name,
            )
            continue
        made[name] = _schema_tool(name, server, config, tool, call)
        sources[name] = tool.name
    return list(made.values())


def _schema_tool(
    name: str, server: str, config: ServerConfig, tool: types.Tool, call: CallTool
) -> SchemaTool:
    async def run(arguments: dict[str, Any]) -> ToolOutput:
        return await call(tool.name, arguments)

    description = tool.description or (tool.annotations.title if tool.annotations else None)
    effect = effect_of(config, tool)
    try:
        return SchemaTool(name, description or tool.name, effect, tool.input_schema, run)
    except ValueError as exc:
        log.warning("MCP server %s: tool %r declares no usable schema (%s)", server, tool.name, exc)
        return SchemaTool(name, description or tool.name, effect, _OBJECT, run)
