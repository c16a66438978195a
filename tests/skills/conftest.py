"""Fixtures for skills: writing `.skill.md` files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

# The `write_skill` fixture: (directory, relative path, name, **front matter) -> path.
WriteSkill = Callable[..., Path]


def skill_text(name: str, description: str = "", body: str = "", **fields: str) -> str:
    """A skill file; `fields` are extra front matter lines given as YAML text."""
    lines = [f"name: {name}", f"description: {description or f'About {name}.'}"]
    lines += [f"{key}: {value}" for key, value in fields.items()]
    return "---\n" + "\n".join(lines) + f"\n---\n{body or f'Body of {name}.'}\n"


@pytest.fixture
def write_skill() -> WriteSkill:
    def write(directory: Path, relative: str, name: str, **kwargs: str) -> Path:
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(skill_text(name, **kwargs), encoding="utf-8")
        return path

    return write
