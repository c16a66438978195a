"""Checks a profile must pass before a conversation runs with it.

A profile naming a platform tool that does not exist or naming one twice, or offering its own
tool under a platform tool's name, is refused with a message naming the profile and the tool;
so is a time zone that is no IANA name (a factory's profile is not checked by the settings).
Names that clash only once tools come and go (a Hand's, awareness's) are refused by the
registry as the step's tools are gathered (`ToolRegistry.tools_for`).
"""

from __future__ import annotations

from collections.abc import Set
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mind.profiles.errors import ProfileError, ToolNameProblem
from mind.profiles.model import Profile


def validate(profile: Profile, platform_names: Set[str]) -> Profile:
    """`profile` itself when it can run with these platform tools; ProfileError otherwise."""
    where = f"profile {profile.name!r}"
    _check_zone(where, profile.time_zone)
    seen: set[str] = set()
    for name in profile.platform_tools or ():
        if name in seen:
            raise ToolNameProblem(f"{where} names the platform tool {name!r} twice")
        if name not in platform_names:
            known = ", ".join(sorted(platform_names))
            raise ToolNameProblem(
                f"{where} names the platform tool {name!r}, which does not exist (known: {known})"
            )
        seen.add(name)
    offered = platform_names if profile.platform_tools is None else seen
    own: set[str] = set()
    for tool in profile.tools:
        if tool.name in own or tool.name in offered:
            raise ToolNameProblem(
                f"{where}: two tools are named {tool.name!r} (the profile's own tool and "
                f"{'another of its own' if tool.name in own else 'a platform tool'})"
            )
        own.add(tool.name)
    return profile


def _check_zone(where: str, zone: str) -> None:
    if not zone:
        return
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ProfileError(
            f"{where}: unknown time zone {zone!r}: use an IANA name like 'Europe/Paris'"
        ) from exc
