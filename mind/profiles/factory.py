"""The profile factory: code named by `[profiles] factory = "package.module:function"`.

It is called once per conversation (again after the conversation's profile changes), with a
`ConversationInfo` and the profile the configuration gives that name, and returns the profile
to run with, or None to keep the configured one. It may be a plain or an async function.
Example::

    def make_profile(info: ConversationInfo, configured: Profile) -> Profile | None:
        if info.profile != "coach":
            return None
        return dataclasses.replace(configured, persona=f"You coach {info.owner}.")
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from mind.profiles.errors import ProfileError
from mind.profiles.imports import import_path
from mind.profiles.model import ConversationInfo, Profile

FactoryFunction = Callable[
    [ConversationInfo, Profile], "Profile | None | Awaitable[Profile | None]"
]


class ProfileFactory:
    def __init__(self, function: FactoryFunction, origin: str) -> None:
        self._function = function
        self.origin = origin

    @classmethod
    def imported(cls, path: str) -> ProfileFactory:
        return cls(import_path(path, "[profiles] factory"), path)

    async def make(self, info: ConversationInfo, configured: Profile) -> Profile:
        """The factory's profile for this conversation; ProfileError when it failed."""
        try:
            made = self._function(info, configured)
            if inspect.isawaitable(made):
                made = await made
        except Exception as exc:  # the factory is the operator's code: its failure is data
            raise ProfileError(
                f"profile {info.profile!r}: the factory {self.origin} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if made is None:
            return configured
        if not isinstance(made, Profile):
            raise ProfileError(
                f"profile {info.profile!r}: the factory {self.origin} returned "
                f"{type(made).__name__}, not a Profile"
            )
        return made
