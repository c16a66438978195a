"""The front matter of a `.skill.md` file: a YAML mapping between `---` lines, then the body.

```markdown
---
name: brewing
description: How to brew coffee with the office machine.
groups: [default, "g_*"]   # optional allowlist; empty or absent = every conversation
always: false              # optional; true inlines the body in the system prompt
---
Grind the beans ...
```

Every problem is a `FrontMatterError` with the 1-based line of the file it is on, so a person
can find it; YAML marks count from the first front matter line (file line 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

FENCE = "---"
KEYS = ("name", "description", "groups", "always")
# The YAML text starts on the line after the opening fence; marks count from 0.
_FIRST_YAML_LINE = 2


class FrontMatterError(ValueError):
    """The front matter is missing, not YAML, or not the expected mapping.

    Not a refusal: the skill loader reports it as the skill's problem and loads the others."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class SkillText:
    name: str
    description: str
    groups: tuple[str, ...]
    always: bool
    body: str


def parse_skill(text: str) -> SkillText:
    """The fields and body of one skill file's text; raises FrontMatterError."""
    yaml_text, body = _split(text.removeprefix("\ufeff"))
    node, data = _load(yaml_text)
    if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
        raise FrontMatterError(1, "the front matter must be a mapping with name and description")
    lines = {str(key.value): key.start_mark.line + _FIRST_YAML_LINE for key, _ in node.value}
    unknown = [key for key in lines if key not in KEYS]
    if unknown:
        key = unknown[0]
        raise FrontMatterError(lines[key], f"unknown key {key!r}; allowed: {', '.join(KEYS)}")
    return SkillText(
        name=_text(data, lines, "name"),
        description=_text(data, lines, "description"),
        groups=_groups(data, lines),
        always=_flag(data, lines),
        body=body.strip(),
    )


def _split(text: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        raise FrontMatterError(1, f"a skill file starts with a {FENCE!r} line of front matter")
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == FENCE:
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise FrontMatterError(1, f"the front matter is not closed by a {FENCE!r} line")


def _load(yaml_text: str) -> tuple[yaml.Node | None, Any]:
    loader = yaml.SafeLoader(yaml_text)
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + _FIRST_YAML_LINE if mark is not None else 1
        raise FrontMatterError(line, f"not valid YAML: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise FrontMatterError(1, f"not valid YAML: {exc}") from exc
    finally:
        loader.dispose()


def _text(data: dict[Any, Any], lines: dict[str, int], key: str) -> str:
    value = data.get(key)
    if key not in lines:
        raise FrontMatterError(1, f"{key!r} is missing")
    if not isinstance(value, str) or not value.strip():
        raise FrontMatterError(lines[key], f"{key!r} must be a non-empty string")
    return value.strip()


def _groups(data: dict[Any, Any], lines: dict[str, int]) -> tuple[str, ...]:
    value = data.get("groups")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(g, str) and g for g in value):
        raise FrontMatterError(lines["groups"], "'groups' must be a list of non-empty strings")
    return tuple(value)


def _flag(data: dict[Any, Any], lines: dict[str, int]) -> bool:
    value = data.get("always", False)
    if not isinstance(value, bool):
        raise FrontMatterError(lines["always"], "'always' must be true or false")
    return value
