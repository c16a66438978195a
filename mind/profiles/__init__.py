"""Agent profiles: what a conversation runs with (persona, tools, thinking level, hooks).

`model` (the profile and what its hooks and factory are given), `declared` (profiles from
`[profiles]`), `factory` (code by import path, per conversation), `validation` (tool names),
`book` (the known profiles; resolving a conversation's), `hooks` (calling them), `scope`
(the cancellation signal and the error of the platform calls profile code makes).
"""

from mind.profiles.errors import ProfileError, ToolNameProblem, UnknownProfile
from mind.profiles.model import (
    DEFAULT_PROFILE,
    ConversationInfo,
    NextTurn,
    NextTurnInfo,
    Profile,
    ProfileHooks,
    ToolCallInfo,
    TurnInfo,
)
from mind.profiles.scope import CancelSignal, PlatformCancelled, PlatformRequestError

__all__ = [
    "DEFAULT_PROFILE",
    "CancelSignal",
    "ConversationInfo",
    "NextTurn",
    "NextTurnInfo",
    "PlatformCancelled",
    "PlatformRequestError",
    "Profile",
    "ProfileError",
    "ProfileHooks",
    "ToolCallInfo",
    "ToolNameProblem",
    "TurnInfo",
    "UnknownProfile",
]
