"""Who may see a conversation: its owner, the members of a group, and scope `admin`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mind.errors import InvalidInput
from tobe.scopes import ADMIN

KEY_PATTERN = re.compile(r"[pg]_[A-Za-z0-9_-]+")
MAX_KEY_LENGTH = 64
MAX_PRINCIPAL_LENGTH = 128


@dataclass(frozen=True)
class Viewer:
    """The principal a gateway acts for, with that principal's scopes."""

    principal: str
    scopes: tuple[str, ...] = ()

    @property
    def is_admin(self) -> bool:
        return ADMIN in self.scopes


def can_see(viewer: Viewer, owner: str, members: list[str]) -> bool:
    return viewer.is_admin or viewer.principal == owner or viewer.principal in members


def check_key(key: str) -> None:
    if len(key) > MAX_KEY_LENGTH or not KEY_PATTERN.fullmatch(key):
        raise InvalidInput(
            f"invalid conversation key {key[:80]!r}: it must start with 'p_' (private) or "
            f"'g_' (group), use only letters, digits, '_' and '-', and be at most "
            f"{MAX_KEY_LENGTH} characters"
        )


def check_principal(principal: str, what: str = "on_behalf_of.principal") -> None:
    if not principal or len(principal) > MAX_PRINCIPAL_LENGTH or principal != principal.strip():
        raise InvalidInput(
            f"{what} must be a non-empty name of at most {MAX_PRINCIPAL_LENGTH} characters "
            "without surrounding spaces"
        )
