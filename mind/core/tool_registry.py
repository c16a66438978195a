"""Which tools a conversation's runs may call, as its profile selects them.

Platform tools are the Mind's own: built-ins (`add_builtin`) and the content tools of platform
sources (`add_platform_source`: skills, resources), which come and go with their content but
whose names are declared, so a profile naming one is checked against every platform tool, not
only the ones present now. Other sources (a Hand's tools, awareness tools) come and go at
runtime; a tool with a `hand_id` is a Hand tool, any other an awareness tool. Awareness tools
reach the owner's environment (their mail, chats, devices, and `drain`, which reads what was
observed), so they are offered only in a conversation nobody but its owner sees: the registry
asks who sees a conversation (`set_audience`; its owner first, then its members).

`tools_for` is asked on every provider step. Names are unique per conversation: a second tool
under a taken name raises `ToolClash` naming the profile and the tool, which ends that
conversation's run; other conversations are unaffected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mind.profiles.errors import ToolNameProblem
from mind.profiles.model import DEFAULT_PROFILE, Profile
from mind.providers.base import ToolDefinition
from mind.tools.base import Tool, ToolSource


class DuplicateToolError(ValueError):
    """Two built-in tools share a name: a defect of the build, found when the registry is made."""


class ToolClash(ToolNameProblem):
    """Two tools offered to one conversation share a name."""


class ToolRegistry:
    def __init__(self, builtins: list[Tool] | None = None) -> None:
        self._builtins: dict[str, Tool] = {}
        self._platform_sources: list[ToolSource] = []
        self._platform_names: set[str] = set()
        self._sources: list[ToolSource] = []
        self._audience: Callable[[str], list[str]] = lambda _key: []
        for tool in builtins or []:
            self.add_builtin(tool)

    def add_builtin(self, tool: Tool) -> None:
        if tool.name in self._platform_names:
            raise DuplicateToolError(f"two built-in tools are named {tool.name!r}")
        self._builtins[tool.name] = tool
        self._platform_names.add(tool.name)

    def add_platform_source(self, source: ToolSource, names: Iterable[str]) -> None:
        """A source of platform tools, which may offer only the tools named in `names`."""
        for name in names:
            if name in self._platform_names:
                raise DuplicateToolError(f"two platform tools are named {name!r}")
            self._platform_names.add(name)
        self._platform_sources.append(source)

    def add_source(self, source: ToolSource) -> None:
        self._sources.append(source)

    def set_audience(self, audience: Callable[[str], list[str]]) -> None:
        """Who sees a conversation (owner and members): awareness tools only reach one that
        nobody but its owner sees."""
        self._audience = audience

    def platform_names(self) -> frozenset[str]:
        return frozenset(self._platform_names)

    def tools_for(
        self, conversation_key: str, profile: Profile = DEFAULT_PROFILE
    ) -> dict[str, Tool]:
        """The tools `profile` offers this conversation now; ToolClash on a shared name."""
        wanted = profile.offered_platform_tools
        if wanted is None:
            tools = dict(self._builtins)
        else:
            tools = {name: tool for name, tool in self._builtins.items() if name in wanted}
        for source in self._platform_sources:
            for tool in source.tools_for(conversation_key):
                if wanted is None or tool.name in wanted:
                    _offer(tools, tool, profile)
        for tool in profile.tools:
            _offer(tools, tool, profile)
        awareness = profile.awareness_tools and len(set(self._audience(conversation_key))) <= 1
        if profile.hand_tools or awareness:
            for source in self._sources:
                for tool in source.tools_for(conversation_key):
                    if profile.hand_tools if tool.hand_id else awareness:
                        _offer(tools, tool, profile)
        return tools

    def definitions(self, tools: dict[str, Tool]) -> list[ToolDefinition]:
        return [ToolDefinition(t.name, t.description, t.parameters) for t in tools.values()]


def _offer(tools: dict[str, Tool], tool: Tool, profile: Profile) -> None:
    if tool.name in tools:
        raise ToolClash(
            f"profile {profile.name!r}: two tools are named {tool.name!r} "
            f"({_origin(tools[tool.name])} and {_origin(tool)}); the conversation cannot run "
            "until one of them is renamed or left out"
        )
    tools[tool.name] = tool


def _origin(tool: Tool) -> str:
    return f"a tool of Hand {tool.hand_id}" if tool.hand_id else type(tool).__name__
