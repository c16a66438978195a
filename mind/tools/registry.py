"""Which tools a conversation's runs may call: built-in tools plus dynamic sources.

Sources (a Hand's tools, awareness tools, skills) come and go at runtime and are asked per
conversation on every provider step. Names are unique per conversation: a source tool whose
name is already taken is left out and logged once.
"""

from __future__ import annotations

import logging

from mind.providers.base import ToolDefinition
from mind.tools.base import Tool, ToolSource

log = logging.getLogger(__name__)


class DuplicateToolError(ValueError):
    """Two built-in tools share a name."""


class ToolRegistry:
    def __init__(self, builtins: list[Tool] | None = None) -> None:
        self._builtins: dict[str, Tool] = {}
        self._sources: list[ToolSource] = []
        self._clashes_logged: set[tuple[str, str]] = set()
        for tool in builtins or []:
            self.add_builtin(tool)

    def add_builtin(self, tool: Tool) -> None:
        if tool.name in self._builtins:
            raise DuplicateToolError(f"two built-in tools are named {tool.name!r}")
        self._builtins[tool.name] = tool

    def add_source(self, source: ToolSource) -> None:
        self._sources.append(source)

    def tools_for(self, conversation_key: str) -> dict[str, Tool]:
        tools = dict(self._builtins)
        for source in self._sources:
            for tool in source.tools_for(conversation_key):
                if tool.name in tools:
                    self._log_clash(conversation_key, tool.name)
                    continue
                tools[tool.name] = tool
        return tools

    def definitions(self, tools: dict[str, Tool]) -> list[ToolDefinition]:
        return [ToolDefinition(t.name, t.description, t.parameters) for t in tools.values()]

    def _log_clash(self, conversation_key: str, name: str) -> None:
        if (conversation_key, name) not in self._clashes_logged:
            self._clashes_logged.add((conversation_key, name))
            log.warning("tool %r offered twice for %s; keeping the first", name, conversation_key)
