"""Why a profile cannot be used: the state of the configuration forbids it (`WrongState`).

ProfileError              the profile cannot run (its message names the profile and the cause)
├── UnknownProfile        no profile has that name (the message lists the known ones)
└── ToolNameProblem       an unknown or duplicate platform tool name, or two tools share a name
"""

from __future__ import annotations

from mind.errors import WrongState


class ProfileError(WrongState):
    pass


class UnknownProfile(ProfileError):
    pass


class ToolNameProblem(ProfileError):
    pass
