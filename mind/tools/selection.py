"""Which of a conversation's tools one run may call.

The registry says what a conversation's profile offers (`ToolRegistry.tools_for`); a run may
be narrower: the decision layer opens only read-only tools to ordinary chat and the plan's
tools to an action it let through (`mind.actions`), a proactive run opens read-only tools and
its own way to end (`mind.agent.proactive`). A selection applies on every step, after
the profile's filter, so it never offers a tool the profile left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mind.tools.base import Effect, Tool


@dataclass(frozen=True)
class ToolSelection:
    # Whether the run may call one of the conversation's tools.
    allow: Callable[[Tool], bool]
    # Tools of the run's own, offered besides (their names must not clash with the others).
    extra: tuple[Tool, ...] = ()
    # Tools whose successful call ends the run after its step (a proactive run's send/skip).
    ends_run: frozenset[str] = frozenset()

    def apply(self, tools: dict[str, Tool]) -> dict[str, Tool]:
        chosen = {name: tool for name, tool in tools.items() if self.allow(tool)}
        for tool in self.extra:
            chosen[tool.name] = tool
        return chosen


def read_only(tool: Tool) -> bool:
    return tool.effect is Effect.READ_ONLY


def read_only_and(names: frozenset[str]) -> Callable[[Tool], bool]:
    """Read-only tools, and the ones named (a plan's meta-actions)."""
    return lambda tool: tool.effect is Effect.READ_ONLY or tool.name in names
