"""What `docker compose -f A -f B … config` renders, without Docker: each file's `${…}`
filled from the project's `.env` (the directory of the first file: `docker/.env` for
`-f docker/compose.yaml`), then the files merged in order as Compose merges them.

Interpolation follows the Compose Specification: `$$` is a literal `$`; `$VAR`, `${VAR}`,
`${VAR:-default}`/`${VAR-default}`, `${VAR:+replacement}`/`${VAR+replacement}` and
`${VAR:?error}`/`${VAR?error}` (the `:` forms treat an empty value as unset).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
    r"|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<operator>:?[-+?])(?P<argument>[^}]*))?\})"
)
# Sequences Compose merges by appending the override's entries (others are replaced whole).
APPENDED = {"ports", "expose", "extra_hosts", "dns", "cap_add", "cap_drop", "env_file"}


class InterpolationError(Exception):
    """A `${VAR:?message}` whose variable is unset, as Compose refuses the file."""


def interpolate(text: str, variables: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["bare"] or match["name"]
        value = variables.get(name)
        operator, argument = match["operator"] or "", match["argument"] or ""
        unset = value is None or (operator.startswith(":") and value == "")
        if operator.endswith("-"):
            return argument if unset else str(value)
        if operator.endswith("+"):
            return "" if unset else argument
        if operator.endswith("?"):
            if unset:
                raise InterpolationError(f"{name}: {argument or 'required'}")
            return str(value)
        return value or ""

    return VARIABLE.sub(replace, text)


def _interpolated(node: Any, variables: dict[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, variables)
    if isinstance(node, dict):
        return {key: _interpolated(value, variables) for key, value in node.items()}
    if isinstance(node, list):
        return [_interpolated(item, variables) for item in node]
    return node


def _environment(value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return dict(item.partition("=")[::2] for item in value)
    return dict(value or {})


def _merge(base: Any, override: Any, key: str = "") -> Any:
    if key == "environment":
        return {**_environment(base), **_environment(override)}
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for name, value in override.items():
            merged[name] = _merge(base[name], value, name) if name in base else value
        return merged
    if key in APPENDED and isinstance(base, list) and isinstance(override, list):
        return base + [item for item in override if item not in base]
    return override


def render(files: list[Path], variables: dict[str, str]) -> dict[str, Any]:
    """The configuration `docker compose -f files[0] -f files[1] …` runs, with the `.env`
    variables `variables` (a shell's own environment would win over them; none here)."""
    rendered: dict[str, Any] = {}
    for path in files:
        document = _interpolated(yaml.safe_load(path.read_text()), variables)
        rendered = _merge(rendered, document)
    return rendered


def compose_commands(text: str) -> list[str]:
    """The `docker compose …` commands in `text` (a README, or a file's comments), each one
    line with its continuations joined."""
    joined = re.sub(r"\\\n\s*#?\s*", " ", text)
    return [match.group(0).strip() for match in re.finditer(r"docker compose [^\n`]*", joined)]


def compose_files(command: str) -> list[str]:
    """The `-f`/`--file` arguments of one `docker compose` command, in order: the global
    options before its subcommand (`logs -f` follows, it names no file)."""
    words = command.split()[2:]
    files: list[str] = []
    while len(words) >= 2 and words[0].startswith("-"):
        option, value = words[0], words[1]
        if option in ("-f", "--file"):
            files.append(value)
        words = words[2:]
    return files
