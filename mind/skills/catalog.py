"""The loaded skills, and which of them a conversation sees.

`groups` is an allowlist: empty means every conversation sees the skill; otherwise one entry
must match the conversation's profile name or its key, as a case-sensitive shell-style glob
(`fnmatch`: `g_*` matches every group conversation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

# Every conversation runs with this profile until profiles can be chosen per conversation.
DEFAULT_PROFILE = "default"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    groups: tuple[str, ...]
    always: bool
    body: str
    path: Path
    # sha256 of the file's bytes, hex.
    digest: str
    # 1 when first loaded in this process; +1 at each reload that finds another digest.
    revision: int

    def visible_to(self, conversation_key: str, profile: str = DEFAULT_PROFILE) -> bool:
        return not self.groups or any(
            fnmatchcase(profile, group) or fnmatchcase(conversation_key, group)
            for group in self.groups
        )


@dataclass(frozen=True)
class Shadowed:
    """A skill file left out because a more specific file has the same name."""

    name: str
    kept: Path
    shadowed: Path


@dataclass(frozen=True)
class SkillProblem:
    """A skill file that could not be loaded, and where."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class SkillCatalog:
    # By name, sorted by name.
    skills: dict[str, Skill] = field(default_factory=dict)
    shadowed: list[Shadowed] = field(default_factory=list)
    errors: list[SkillProblem] = field(default_factory=list)

    def visible(self, conversation_key: str, profile: str = DEFAULT_PROFILE) -> list[Skill]:
        return [s for s in self.skills.values() if s.visible_to(conversation_key, profile)]
