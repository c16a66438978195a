"""What the documentation shows must be real: links, `tobe` commands and settings.

The documents are read as Markdown: fenced code blocks, inline code spans, links and headings.
Three checks, each returning one line per problem naming the file and line:

- links: every relative link resolves to a file or directory of the repository, and every
  `#anchor` (in the same file or another Markdown file) matches a heading's GitHub slug;
- commands: every `tobe …` invocation in a shell block or an inline code span names commands
  that exist and options those commands take;
- settings: every key of a TOML block, every `[section] key`, every dotted `section.key` and
  every `TOBE_*` variable is a field of `tobe.config.Settings`, or, for a variable that names
  no setting, one the code reads (its name appears in a source file).
"""

from __future__ import annotations

import functools
import importlib
import re
import tomllib
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel

from tobe.config import Settings

SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console", "zsh"})
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
SECTION_KEY = re.compile(r"^\[\[?([a-z_][a-z0-9_.]*)\]\]?(?:\s+([a-z_][a-z0-9_]*))?")
DOTTED = re.compile(r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*(?:\.\*)?$")
VARIABLE = re.compile(r"\bTOBE_[A-Z0-9_]*")
# What ends a file name rather than a setting's key (`mind.proto`, `store.py`).
FILE_SUFFIXES = frozenset({"py", "proto", "js", "sock", "md", "json", "toml", "yaml", "pem", "db"})
# Characters a shell word may be wrapped in, in prose or in `sh -c '…'`.
WRAPPING = "'\"()`"
# Shell words after which a command's own words end.
COMMAND_END = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "<", "2>&1", ">&2"})
# The sources searched for a `TOBE_*` variable that names no setting (the tests read a few of
# their own, such as the one that refreshes the web client's picture).
SOURCE_SUFFIXES = frozenset({".py", ".sh", ".yaml", ".example", ".toml", ".js"})
SOURCE_DIRS = (
    "tobe",
    "mind",
    "face",
    "hand",
    "awareness",
    "management",
    "docker",
    "scripts",
    "tests",
)


@dataclass(frozen=True)
class Span:
    """A piece of a document: its text, its line, and what kind of piece it is."""

    path: Path
    line: int
    text: str
    kind: str  # "prose", "code" (inline), or a fenced block's language ("" when none)

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


def documents(root: Path) -> list[Path]:
    """The README, the architecture map and every guide under docs/."""
    found = [root / "README.md", root / "ARCHITECTURE.md"]
    return [path for path in found if path.exists()] + sorted((root / "docs").rglob("*.md"))


def spans(path: Path) -> Iterator[Span]:
    """Fenced blocks (one span each, starting at their first line), inline code and prose."""
    fence: str | None = None
    language = ""
    block: list[str] = []
    start = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened.group(2).startswith(fence) and not opened.group(3):
                yield Span(path, start, "\n".join(block), language)
                fence = None
            else:
                block.append(line)
            continue
        if opened:
            fence, language, block, start = opened.group(2), opened.group(3), [], number + 1
            continue
        prose = line
        for code in INLINE_CODE.finditer(line):
            yield Span(path, number, code.group(2).strip(), "code")
            prose = prose.replace(code.group(0), " ")
        yield Span(path, number, prose, "prose")


# --- links -------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, repeated ones numbered as GitHub does."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for span in spans(path):
        heading = HEADING.match(span.text) if span.kind == "prose" else None
        if heading is None:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def link_problems(paths: list[Path], root: Path) -> list[str]:
    problems: list[str] = []
    for path in paths:
        for span in spans(path):
            if span.kind != "prose":
                continue
            for match in LINK.finditer(span.text):
                target = match.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:: not the repository's
                problem = _unresolved(path, target, root)
                if problem:
                    problems.append(f"{span.where(root)}: link {target!r} {problem}")
    return problems


def _unresolved(path: Path, target: str, root: Path) -> str:
    file_part, _, anchor = target.partition("#")
    linked = (path.parent / file_part).resolve() if file_part else path
    if not linked.exists():
        return "names no file"
    if root.resolve() not in (linked, *linked.parents):
        return "leaves the repository"
    if anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
        return f"names no heading of {linked.relative_to(root.resolve())}"
    return ""


# --- commands ----------------------------------------------------------------------------


def invocations(paths: list[Path]) -> Iterator[tuple[Span, list[str]]]:
    """Each `tobe …` a shell block or an inline code span shows, as its words after `tobe`."""
    for path in paths:
        for span in spans(path):
            if span.kind == "code":
                lines = [span.text]
            elif span.kind in SHELL_LANGUAGES:
                lines = span.text.replace("\\\n", " ").splitlines()
            else:
                continue
            for line in lines:
                words = [word.strip(WRAPPING) for word in line.split("#")[0].split()]
                for index, word in enumerate(words):
                    before = words[index - 1] if index else ""
                    if word == "tobe" and not before.startswith("-"):
                        yield span, _own_words(words[index + 1 :])


def _own_words(words: list[str]) -> list[str]:
    own: list[str] = []
    for word in words:
        if word in COMMAND_END or word.startswith((">", "<", "|")):
            break
        own.append(word.strip("[]"))
    return own


def command_path(root_command: click.Group, words: list[str]) -> tuple[list[str], str]:
    """The subcommand names `words` lead through, and what is wrong with them (or "")."""
    context = click.Context(root_command, info_name="tobe")
    command: click.Command = root_command
    names: list[str] = []
    pending_value = False
    for word in words:
        if pending_value:
            pending_value = False
            continue
        if word.startswith("-") and word != "-":
            name = word.split("=")[0]
            option = _option(command, name)
            if option is None and name not in ("-h", "--help"):
                return names, f"`{_shown(names)}` has no option {name}"
            pending_value = bool(option and not option.is_flag and option.nargs > 0) and (
                "=" not in word
            )
            continue
        if not isinstance(command, click.Group):
            continue  # an argument of the command
        if word in ("…", "...") or word.startswith(("<", "{")):
            break  # a placeholder for a subcommand
        found = command.get_command(context, word)
        if found is None:
            return names, f"`{_shown(names)}` has no subcommand {word!r}"
        names.append(word)
        command = found
    return names, ""


def _shown(names: list[str]) -> str:
    return " ".join(["tobe", *names])


def _option(command: click.Command, name: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def command_problems(paths: list[Path], root: Path, root_command: click.Group) -> list[str]:
    problems: list[str] = []
    for span, words in invocations(paths):
        _, problem = command_path(root_command, words)
        if problem:
            problems.append(f"{span.where(root)}: {problem}")
    return problems


def shown_commands(paths: list[Path], root_command: click.Group) -> set[tuple[str, ...]]:
    """Every distinct command path the documents show."""
    return {tuple(command_path(root_command, words)[0]) for _, words in invocations(paths)}


# --- test references ---------------------------------------------------------------------

TEST_REFERENCE = re.compile(r"^(tests/[\w/]+\.py)?(?:::(\w+))?$")


def cited_test_problems(paths: list[Path], root: Path) -> list[str]:
    """Every `tests/….py` and `tests/….py::test_name` (or `::test_name` after one) exists."""
    problems: list[str] = []
    for path in paths:
        last_file: Path | None = None
        for span in spans(path):
            reference = TEST_REFERENCE.match(span.text) if span.kind == "code" else None
            if reference is None or not any(reference.groups()):
                continue
            if reference.group(1):
                last_file = root / reference.group(1)
                if not last_file.is_file():
                    problems.append(f"{span.where(root)}: {reference.group(1)} is no file")
                    continue
            name = reference.group(2)
            if name and (last_file is None or f"def {name}(" not in last_file.read_text()):
                problems.append(f"{span.where(root)}: {span.text} names no test")
    return problems


# --- settings ----------------------------------------------------------------------------


def _model(annotation: Any) -> Any:
    """The model (or mapping) a field's values are checked against, through lists and options."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for argument in typing.get_args(annotation):
            found = _model(argument)
            if found is not None:
                return found
        return None
    if origin is list:
        return _model(typing.get_args(annotation)[0])
    if origin is dict:
        return dict
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def setting_exists(path: list[str], model: Any = Settings) -> bool:
    """Whether `path` (`["face", "web", "listen"]`, `"*"` for any key) names a setting."""
    for index, part in enumerate(path):
        if model is dict:
            return True  # a mapping's keys are the operator's
        if model is None or not (isinstance(model, type) and issubclass(model, BaseModel)):
            return False
        if part == "*":
            return index == len(path) - 1
        field = model.model_fields.get(part)
        if field is None:
            return False
        model = _model(field.annotation)
    return True


def setting_keys(model: type[BaseModel] = Settings, prefix: str = "") -> Iterator[str]:
    """Every setting, dotted: a section's fields one by one, a list of tables as one key."""
    for name, field in model.model_fields.items():
        inner = _model(field.annotation)
        nested = isinstance(inner, type) and issubclass(inner, BaseModel)
        if nested and typing.get_origin(field.annotation) is not list:
            yield from setting_keys(inner, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def unlisted_settings(reference: str) -> list[str]:
    """The settings a reference does not name, by key, a `section.*` or a section it names."""
    unlisted: list[str] = []
    for key in setting_keys():
        parts = key.split(".")
        shown = [".".join(parts[:cut]) for cut in range(2, len(parts) + 1)]
        if not any(f"`{name}`" in reference or f"`{name}.*`" in reference for name in shown):
            if f"`{key}`" not in reference:
                unlisted.append(key)
    return unlisted


def _toml_keys(table: dict[str, Any], prefix: list[str]) -> Iterator[list[str]]:
    for key, value in table.items():
        yield [*prefix, key]
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                yield from _toml_keys(item, [*prefix, key])


def _names_a_setting(text: str, sections: set[str]) -> bool:
    """Whether inline code reads as `section.key`: not a file name, a module or an attribute.

    A name such as `mind.agnet` is neither a setting nor code: it is checked as a setting, so
    the mistake is reported rather than taken for a module."""
    if not DOTTED.match(text) or "." not in text or text.split(".")[0] not in sections:
        return False
    return text.rsplit(".", 1)[1] not in FILE_SUFFIXES and not _is_code(text.removesuffix(".*"))


def _is_code(name: str) -> bool:
    """Whether a dotted name is a module, or an attribute of one (not a setting)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def _read_by_code(variable: str, root: Path) -> bool:
    return variable in _sources(root)


@functools.cache
def _sources(root: Path) -> str:
    """The text of every source file a `TOBE_*` variable may be read in."""
    texts = [(root / ".ci" / "run").read_text(encoding="utf-8")]
    for directory in SOURCE_DIRS:
        for source in (root / directory).rglob("*"):
            if source.suffix in SOURCE_SUFFIXES and "node_modules" not in source.parts:
                texts.append(source.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


def setting_problems(paths: list[Path], root: Path) -> list[str]:
    problems: list[str] = []
    sections = set(Settings.model_fields)

    def check(span: Span, path: list[str], shown: str) -> None:
        if not setting_exists(path):
            problems.append(f"{span.where(root)}: {shown} is no setting")

    for path in paths:
        for span in spans(path):
            if span.kind == "toml":
                for key in _toml_keys(tomllib.loads(span.text), []):
                    check(span, key, "[" + ".".join(key[:-1]) + "] " + key[-1])
            if span.kind == "code":
                section = SECTION_KEY.match(span.text)
                if section and section.group(1).split(".")[0] in sections:
                    key = section.group(1).split(".") + [k for k in [section.group(2)] if k]
                    check(span, key, span.text)
                elif _names_a_setting(span.text, sections):
                    check(span, span.text.split("."), span.text)
            for variable in VARIABLE.findall(span.text):
                problem = _variable_problem(variable, root)
                if problem:
                    problems.append(f"{span.where(root)}: {variable} {problem}")
    return problems


def _variable_problem(variable: str, root: Path) -> str:
    name = variable.removeprefix("TOBE_")
    if not name or name.endswith("_") and not name.endswith("__"):
        return ""  # a pattern such as TOBE_<SERVICE>__LISTEN, written around a placeholder
    key = [part.lower() for part in name.removesuffix("__").split("__")]
    if name.endswith("__"):
        key.append("*")
    if setting_exists(key) or _read_by_code(variable, root):
        return ""
    return "is no setting, and no code reads it"
