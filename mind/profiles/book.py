"""The profiles this Mind knows, and the one a conversation runs with.

`check` answers whether a conversation may be set to a name (CreateConversation,
SetConversationProfile, `tobe admin`): unknown names and declarative profiles known to be bad
are refused with the message their runs would fail with. `resolve` makes a conversation's
profile (through the factory when one is configured) and validates it against the platform
tools; the conversation's actor keeps the result until the profile changes.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass, replace

from mind.profiles.declared import declared_profiles
from mind.profiles.errors import ProfileError, UnknownProfile
from mind.profiles.factory import ProfileFactory
from mind.profiles.model import ConversationInfo, Profile
from mind.profiles.validation import validate
from tobe.config import ProfilesSettings


@dataclass(frozen=True)
class ProfileSummary:
    """A profile as clients list it (Mind.ListProfiles)."""

    name: str
    description: str
    platform_tools: tuple[str, ...]
    is_default: bool


class ProfileBook:
    def __init__(
        self,
        profiles: dict[str, Profile | ProfileError],
        default: str,
        platform_names: Callable[[], Set[str]],
        factory: ProfileFactory | None = None,
    ) -> None:
        self._profiles = profiles
        self.default = default
        self._platform_names = platform_names
        self._factory = factory

    @classmethod
    def from_settings(
        cls, settings: ProfilesSettings, platform_names: Callable[[], Set[str]]
    ) -> ProfileBook:
        """ProfileError when the section as a whole is wrong (the Mind must not start)."""
        factory = ProfileFactory.imported(settings.factory) if settings.factory else None
        return cls(declared_profiles(settings), settings.default, platform_names, factory)

    @property
    def names(self) -> list[str]:
        return list(self._profiles)

    def check(self, name: str) -> str:
        """The profile a conversation set to `name` gets ("" = the default); UnknownProfile,
        or the ProfileError of a profile known to be bad."""
        name = name or self.default
        found = self._profiles.get(name)
        if found is None:
            raise UnknownProfile(f"no profile {name!r}; known profiles: {', '.join(self.names)}")
        if isinstance(found, ProfileError):
            raise found
        validate(found, self._platform_names())
        return name

    def declared(self, name: str) -> Profile | None:
        """The configured profile `name` ("" = the default) as declared (no factory), or None
        when it is unknown or known to be bad."""
        found = self._profiles.get(name or self.default)
        return found if isinstance(found, Profile) else None

    def summaries(self) -> list[ProfileSummary]:
        platform = tuple(sorted(self._platform_names()))
        return [
            ProfileSummary(
                name=name,
                description=str(found) if isinstance(found, ProfileError) else found.description,
                platform_tools=(
                    ()
                    if isinstance(found, ProfileError)
                    else found.platform_tools
                    if found.platform_tools is not None
                    else platform
                ),
                is_default=name == self.default,
            )
            for name, found in self._profiles.items()
        ]

    async def resolve(self, info: ConversationInfo) -> Profile:
        """The validated profile `info`'s conversation runs with; ProfileError if it cannot."""
        name = info.profile or self.default
        found = self._profiles.get(name)
        if found is None:
            raise UnknownProfile(
                f"the conversation's profile {name!r} is not configured (known profiles: "
                f"{', '.join(self.names)})"
            )
        if isinstance(found, ProfileError):
            raise found
        if self._factory is not None:
            found = await self._factory.make(replace(info, profile=name), found)
        return validate(found, self._platform_names())
