"""Configuration errors a person can act on: where the bad setting is written, and what is wrong.

Every problem is one line that starts with where the value came from: `config.toml:3` for the
file (line found by `tobe.toml_lines`), the `TOBE_*` variable's name for the environment
(which wins over the file), nothing for values passed in code. Unknown sections and keys are
named with the closest known one (`did you mean [provider]?`).
"""

from __future__ import annotations

import difflib
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from tobe.toml_lines import TomlPath, key_lines, line_of

ENV_PREFIX = "TOBE_"
ENV_DELIMITER = "__"
_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_SECRET_WORDS = ("key", "token", "secret", "password")
# Settings whose value may hold a secret although their name says none (a URL's password).
_SECRET_BEARING = frozenset({"database_url"})
_MAX_LISTED = 12


class ConfigError(Exception):
    """The configuration cannot be used; each line names where a setting is and what is wrong."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def read_toml(path: Path) -> tuple[str, dict[str, Any]] | None:
    """The text and data of the configuration file; None when there is none."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read the configuration file: {exc.strerror}"]) from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        position = _TOML_POSITION.search(message)
        where = f"{path}:{position.group(1)}:{position.group(2)}" if position else str(path)
        reason = _TOML_POSITION.sub("", message)
        raise ConfigError([f"{where}: invalid TOML: {reason}"]) from None


def settings_problems(
    error: ValidationError,
    model: type[BaseModel],
    *,
    file: Path | None,
    document: tuple[str, dict[str, Any]] | None,
    environ: Mapping[str, str],
) -> ConfigError:
    """One line per validation error, each naming the variable or `file:line` it came from."""
    lines = key_lines(document[0]) if document is not None else {}
    data = document[1] if document is not None else {}
    # (line in the file or 0, problem): the file's problems come in the order of its lines.
    problems: list[tuple[int, str]] = []
    for detail in error.errors():
        loc: TomlPath = tuple(detail["loc"])
        where = _variable(loc, environ)
        line = None
        in_file = where is None and file is not None and _written(data, loc, detail["type"])
        if in_file:
            line = line_of(lines, loc)
            where = f"{file}:{line}" if line is not None else str(file)
        text = _describe(detail, loc, model, data if in_file else None)
        problems.append((line or 0, f"{where}: {text}" if where else text))
    return ConfigError([problem for _line, problem in sorted(problems, key=lambda p: p[0])])


def environment_problem(field: str, environ: Mapping[str, str], reason: str) -> ConfigError:
    """A `TOBE_*` variable whose value is not the JSON its setting needs."""
    stem = (ENV_PREFIX + field).upper()
    names = sorted(
        name
        for name in environ
        if name.upper() == stem or name.upper().startswith(stem + ENV_DELIMITER)
    )
    where = " or ".join(names) or stem
    return ConfigError([f"{where}: not valid JSON for [{field}] ({reason})"])


def _variable(loc: TomlPath, environ: Mapping[str, str]) -> str | None:
    """The `TOBE_*` variable that set `loc` or one of its ancestors (most specific first)."""
    keys: list[str] = []
    for part in loc:
        if not isinstance(part, str):
            break
        keys.append(part)
    by_upper = {name.upper(): name for name in environ}
    for end in range(len(keys), 0, -1):
        name = by_upper.get((ENV_PREFIX + ENV_DELIMITER.join(keys[:end])).upper())
        if name is not None:
            return name
    return None


def _written(data: dict[str, Any], loc: TomlPath, kind: str) -> bool:
    """Whether the file holds `loc` (for a missing key: the table that lacks it)."""
    node: Any = data
    for part in loc[:-1] if kind == "missing" else loc:
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return False
    return True


def _describe(
    detail: ErrorDetails, loc: TomlPath, model: type[BaseModel], data: dict[str, Any] | None
) -> str:
    kind = detail["type"]
    if not loc:
        return detail["msg"].removeprefix("Value error, ")
    if kind == "extra_forbidden":
        return _unknown(loc, model, data)
    if kind == "missing":
        where = f"{_section(loc[:-1])}: " if loc[:-1] else ""
        return f"{where}{loc[-1]!r} is required"
    if kind == "literal_error":
        allowed = [value for value in re.findall(r"'([^']*)'", detail["ctx"]["expected"]) if value]
        return f"{_label(loc)}: {detail['input']!r} is not one of {', '.join(allowed)}"
    message = detail["msg"].removeprefix("Value error, ")
    name = str(next((part for part in reversed(loc) if isinstance(part, str)), ""))
    shown = repr(detail["input"])
    secret = any(word in name for word in _SECRET_WORDS) or name in _SECRET_BEARING
    if secret or isinstance(detail["input"], dict | list) or shown in message:
        return f"{_label(loc)}: {message}"
    return f"{_label(loc)}: {message} (got {shown})"


def _unknown(loc: TomlPath, model: type[BaseModel], data: dict[str, Any] | None) -> str:
    """An unknown section or key, with the closest known name."""
    name, parent = str(loc[-1]), loc[:-1]
    known = list(_fields(model, parent))
    close = difflib.get_close_matches(name, known, n=1)
    if data is not None and isinstance(_value(data, loc), dict):
        dotted = ".".join(str(part) for part in parent if isinstance(part, str))
        full = f"{dotted}.{name}" if dotted else name
        hint = f"; did you mean [{dotted + '.' if dotted else ''}{close[0]}]?" if close else ""
        return f"unknown section [{full}]{hint or _listing(known)}"
    where = f"{_section(parent)} " if parent else ""
    hint = f"; did you mean {close[0]!r}?" if close else _listing(known)
    return f"{where}unknown {'key' if parent else 'setting'} {name!r}{hint}"


def _listing(known: list[str]) -> str:
    return f" (known: {', '.join(sorted(known))})" if 0 < len(known) <= _MAX_LISTED else ""


def _label(loc: TomlPath) -> str:
    """How a setting reads in TOML: `data_dir`, `[provider] kind`, `[[provider.models]] #2 id`."""
    *table, key = loc
    if isinstance(key, int):
        return f"{_label(tuple(table))} #{key + 1}"
    return f"{_section(tuple(table))} {key}" if table else key


def _section(table: TomlPath) -> str:
    """A table's header as written: `[mind.tls]`, or `[[provider.models]] #2` for an entry."""
    names = ".".join(part for part in table if isinstance(part, str))
    entries = [str(part + 1) for part in table if isinstance(part, int)]
    return f"[[{names}]] #{'/'.join(entries)}" if entries else f"[{names}]"


def _value(data: dict[str, Any], loc: TomlPath) -> Any:
    node: Any = data
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _fields(model: type[BaseModel], loc: TomlPath) -> tuple[str, ...]:
    """The setting names of the section at `loc` (empty when it is not a section)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return ()
        field = current.model_fields.get(part)
        if field is None:
            return ()
        current = _model_of(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return tuple(current.model_fields)
    return ()


def _model_of(annotation: Any) -> Any:
    """The model class inside `X | None`, `list[X]` or `dict[str, X]`, else the annotation."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, dict):
        for argument in typing.get_args(annotation):
            inner = _model_of(argument)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                return inner
    return annotation
