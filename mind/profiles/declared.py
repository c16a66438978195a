"""Profiles the operator declares in `[profiles]` (`tobe.config.ProfilesSettings`).

Each `[[profiles.profile]]` table becomes a `Profile`; its hooks are import paths. A table
that cannot become one (a thinking level that is no level, a hook that does not import) is
kept as its problem: conversations set to it fail with that message while every other keeps
working. A table named `default` replaces the built-in default profile.
"""

from __future__ import annotations

from typing import Any

from mind.profiles.errors import ProfileError
from mind.profiles.imports import import_path
from mind.profiles.model import DEFAULT_NAME, DEFAULT_PROFILE, Profile, ProfileHooks
from mind.providers.base import ThinkingLevel
from tobe.config import ProfileEntry, ProfilesSettings

HOOK_NAMES = (
    "before_tool_call",
    "after_tool_call",
    "should_stop_after_turn",
    "prepare_next_turn",
)


def profile_of(entry: ProfileEntry) -> Profile:
    """The profile a table declares; ProfileError naming the profile and the setting."""
    where = f"profile {entry.name!r}"
    if entry.thinking and entry.thinking not in set(ThinkingLevel):
        levels = ", ".join(level.value for level in ThinkingLevel)
        raise ProfileError(f"{where}: thinking {entry.thinking!r} is not one of {levels}")
    budgets = _budgets(where, entry.thinking_budgets)
    hooks: dict[str, Any] = {
        name: import_path(getattr(entry, name), f"{where}: {name}")
        for name in HOOK_NAMES
        if getattr(entry, name)
    }
    return Profile(
        name=entry.name,
        description=entry.description,
        persona=entry.persona,
        platform_tools=tuple(entry.platform_tools),
        hand_tools=entry.hand_tools,
        awareness_tools=entry.awareness_tools,
        thinking=ThinkingLevel(entry.thinking) if entry.thinking else None,
        welcome=entry.welcome,
        error_reply=entry.error_reply,
        hooks=ProfileHooks(**hooks),
        actions=entry.actions,
        time_zone=entry.time_zone,
        thinking_budgets=budgets or None,
        tool_execution=entry.tool_execution,
    )


def _budgets(where: str, budgets: dict[str, int]) -> dict[ThinkingLevel, int]:
    """`thinking_budgets` by level; ProfileError for a level that is none or a budget below 1."""
    levels = {level.value for level in ThinkingLevel} - {ThinkingLevel.OFF.value}
    for name, tokens in budgets.items():
        if name not in levels:
            raise ProfileError(
                f"{where}: thinking_budgets names {name!r}, not one of {', '.join(sorted(levels))}"
            )
        if tokens < 1:
            raise ProfileError(f"{where}: thinking_budgets {name!r} must be at least 1 token")
    return {ThinkingLevel(name): tokens for name, tokens in budgets.items()}


def declared_profiles(settings: ProfilesSettings) -> dict[str, Profile | ProfileError]:
    """Every known profile by name (the built-in default first), or why it cannot be used.

    Two tables with one name, or a `default` that names no profile, are configuration
    mistakes that concern every conversation: ProfileError, and the Mind does not start.
    """
    found: dict[str, Profile | ProfileError] = {DEFAULT_NAME: DEFAULT_PROFILE}
    seen: set[str] = set()
    for entry in settings.profile:
        if entry.name in seen:
            raise ProfileError(f"[profiles] declares two profiles named {entry.name!r}")
        seen.add(entry.name)
        try:
            found[entry.name] = profile_of(entry)
        except ProfileError as exc:
            found[entry.name] = exc
    if settings.default not in found:
        known = ", ".join(found)
        raise ProfileError(
            f"[profiles] default {settings.default!r} names no profile (known: {known})"
        )
    return found
