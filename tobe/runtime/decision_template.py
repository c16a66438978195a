"""Decision templates: how a Hand tool says what a person approves, from the call's arguments.

A template is text with `{name}` placeholders, each naming a top-level argument; `{{` and `}}`
stand for literal braces. The rendering rule is part of the HandLink contract (`ToolSpec` in
`hand.proto`), so a Hand in any language can rely on it: a string argument renders as itself,
an array of strings shell-quoted and joined with spaces (`shlex.join`), any other value as
compact JSON; an absent argument renders as its schema `default` when it declares one, else as
nothing. Shared by the Mind (checks a Hand's declaration and
renders calls) and the Python Hand SDK (checks a declaration before it is sent).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")


class TemplateError(ValueError):
    """A decision template that cannot be rendered (stray brace, unknown argument)."""


@dataclass(frozen=True)
class _Part:
    text: str
    # True: `text` names an argument; False: `text` is literal.
    placeholder: bool


def _parts(template: str) -> list[_Part]:
    parts: list[_Part] = []
    position = 0
    for match in _TOKEN.finditer(template):
        parts.append(_Part(template[position : match.start()], False))
        token = match.group(0)
        if match.group(1):
            parts.append(_Part(match.group(1), True))
        elif token in ("{{", "}}"):
            parts.append(_Part(token[0], False))
        else:
            raise TemplateError(
                f"unmatched {token!r} at position {match.start()}: write {{name}} to show an "
                f"argument, or {token * 2} for a literal brace"
            )
        position = match.end()
    parts.append(_Part(template[position:], False))
    return parts


def check_template(template: str, argument_names: set[str]) -> None:
    """Raise `TemplateError` unless `template` parses and names only `argument_names`."""
    for part in _parts(template):
        if part.placeholder and part.text not in argument_names:
            known = ", ".join(sorted(argument_names)) or "none"
            raise TemplateError(
                f"{{{part.text}}} names no argument of the tool (arguments: {known})"
            )


def schema_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """The `default` of each top-level property that declares one."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    return {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, dict) and "default" in spec
    }


def render_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return shlex.join(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render_template(template: str, arguments: dict[str, Any]) -> str:
    """The template with each placeholder replaced by its argument (see the module docstring)."""
    return "".join(
        (render_value(arguments[part.text]) if part.text in arguments else "")
        if part.placeholder
        else part.text
        for part in _parts(template)
    )
