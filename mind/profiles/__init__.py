"""Agent profiles: what a conversation runs with (persona, tools, thinking level, hooks).

`model` (the profile and what its hooks and factory are given), `declared` (profiles from
`[profiles]`), `factory` (code by import path, per conversation), `validation` (tool names),
`book` (the known profiles; resolving a conversation's), `hooks` (calling them).
"""

from mind.profiles.errors import ProfileError, ToolNameProblem, UnknownProfile
from mind.profiles.model import (
    DEFAULT_PROFILE,
    ConversationInfo,
    Profile,
    ProfileHooks,
    ToolCallInfo,
    TurnInfo,
)

__all__ = [
    "DEFAULT_PROFILE",
    "ConversationInfo",
    "Profile",
    "ProfileError",
    "ProfileHooks",
    "ToolCallInfo",
    "ToolNameProblem",
    "TurnInfo",
    "UnknownProfile",
]
