"""Finds `.skill.md` files and settles name clashes by path priority.

Priority, most specific first: a directory listed later in `[skills] dirs` beats every one
listed before it; within one directory a deeper file (more path components below the
directory) beats a shallower one; at equal depth the relative path that sorts first wins.
The files that lose are reported in `SkillCatalog.shadowed`, naming both files.

Files are found under each directory recursively, without following symlinked directories
and skipping dot folders (`.git`). A file that does not load is reported in
`SkillCatalog.errors` with its line and left out; loading never raises.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from mind.skills.catalog import Shadowed, Skill, SkillCatalog, SkillProblem
from mind.skills.frontmatter import FrontMatterError, parse_skill

SUFFIX = ".skill.md"


class SkillLoadError(Exception):
    """A skill file that does not load; reported, never raised out of `load_catalog`."""

    def __init__(self, problem: SkillProblem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@dataclass(frozen=True)
class _Found:
    skill: Skill
    dir_index: int
    relative: Path

    def rank(self) -> tuple[int, int, str]:
        """Sorts the most specific first."""
        return (-self.dir_index, -len(self.relative.parts), self.relative.as_posix())


def skill_files(directory: Path) -> Iterator[Path]:
    """Every skill file under `directory`, in sorted order; nothing if it does not exist."""
    for root, folders, files in os.walk(directory):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if name.endswith(SUFFIX) and not name.startswith("."):
                yield Path(root) / name


def load_catalog(dirs: Sequence[Path], known: Mapping[str, Skill]) -> SkillCatalog:
    """Load every skill under `dirs`; `known` (the last version seen of each name) sets the
    revision: kept for the same digest, one more for another."""
    found: dict[str, list[_Found]] = {}
    errors: list[SkillProblem] = []
    for index, directory in enumerate(dirs):
        for path in skill_files(directory):
            try:
                skill = _read(path, known)
            except SkillLoadError as exc:
                errors.append(exc.problem)
                continue
            entry = _Found(skill, index, path.relative_to(directory))
            found.setdefault(skill.name, []).append(entry)
    skills: dict[str, Skill] = {}
    shadowed: list[Shadowed] = []
    for name in sorted(found):
        best, *rest = sorted(found[name], key=_Found.rank)
        skills[name] = best.skill
        shadowed += [Shadowed(name, best.skill.path, other.skill.path) for other in rest]
    return SkillCatalog(skills, shadowed, errors)


def _read(path: Path, known: Mapping[str, Skill]) -> Skill:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkillLoadError(SkillProblem(path, 1, f"cannot read: {exc.strerror}")) from exc
    try:
        text = parse_skill(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SkillLoadError(SkillProblem(path, 1, "not UTF-8 text")) from exc
    except FrontMatterError as exc:
        raise SkillLoadError(SkillProblem(path, exc.line, exc.message)) from exc
    digest = hashlib.sha256(data).hexdigest()
    skill = Skill(text.name, text.description, text.groups, text.always, text.body, path, digest, 1)
    previous = known.get(text.name)
    if previous is None:
        return skill
    revision = previous.revision + (previous.digest != digest)
    return replace(skill, revision=revision)
