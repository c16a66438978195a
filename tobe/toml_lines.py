"""Which line of a TOML document each key is written on, for error messages.

`tomllib` parses without positions. This scanner follows the grammar just far enough to know
which table a line belongs to (`[table]`, `[[array.of.tables]]` with the index of each entry,
dotted keys) and to step over multi-line strings and arrays, so that a setting found wrong
after parsing can be named by `file:line`. It reads documents `tomllib` has already accepted.

Paths are tuples of keys and array-of-tables indexes: the `id` of the second
`[[provider.models]]` entry is `("provider", "models", 1, "id")`. Values inside inline tables
and arrays are not descended into; their key's line stands for them.
"""

from __future__ import annotations

import re

TomlPath = tuple[str | int, ...]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")
_SIMPLE_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


def key_lines(text: str) -> dict[TomlPath, int]:
    """Every table and key of `text` with the 1-based line it is first written on."""
    return _Scanner(text).scan()


def line_of(lines: dict[TomlPath, int], path: TomlPath) -> int | None:
    """The line of `path`, else of its nearest written ancestor; None when none is written."""
    for end in range(len(path), 0, -1):
        line = lines.get(path[:end])
        if line is not None:
            return line
    return None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.lines: dict[TomlPath, int] = {}
        # Entries so far of each array of tables, by its path (with the parents' indexes).
        self.entries: dict[TomlPath, int] = {}
        self.table: TomlPath = ()

    def scan(self) -> dict[TomlPath, int]:
        while self._skip_blank():
            if self._peek() == "[":
                self._header()
            else:
                keys = self._keys()
                self._record(self.table, keys)
                self._expect("=")
                self._skip_value()
        return self.lines

    def _header(self) -> None:
        array = self.text.startswith("[[", self.pos)
        self.pos += 2 if array else 1
        keys = self._keys()
        self.pos += 2 if array else 1
        path = self._resolve(keys[:-1] if array else keys)
        if array:
            path = (*path, keys[-1])
            self.lines.setdefault(path, self.line)
            index = self.entries.get(path, 0)
            self.entries[path] = index + 1
            path = (*path, index)
        self.lines[path] = self.line
        self.table = path

    def _resolve(self, keys: list[str]) -> TomlPath:
        """The path of a table header's keys: arrays of tables stand for their last entry."""
        path: TomlPath = ()
        for key in keys:
            path = (*path, key)
            self.lines.setdefault(path, self.line)
            if path in self.entries:
                path = (*path, self.entries[path] - 1)
        return path

    def _record(self, table: TomlPath, keys: list[str]) -> None:
        path = table
        for key in keys:
            path = (*path, key)
            self.lines.setdefault(path, self.line)

    def _keys(self) -> list[str]:
        keys = [self._key()]
        while True:
            self._skip_spaces()
            if self._peek() != ".":
                return keys
            self.pos += 1
            keys.append(self._key())

    def _key(self) -> str:
        self._skip_spaces()
        quote = self._peek()
        if quote in ('"', "'"):
            end = self._string_end()
            raw = self.text[self.pos + 1 : end - 1]
            self.pos = end
            return _unescape(raw) if quote == '"' else raw
        match = _BARE_KEY.match(self.text, self.pos)
        if match is None:
            raise ValueError(f"line {self.line}: expected a key")
        self.pos = match.end()
        return match.group()

    def _expect(self, char: str) -> None:
        self._skip_spaces()
        if self._peek() != char:
            raise ValueError(f"line {self.line}: expected {char!r}")
        self.pos += 1

    def _skip_value(self) -> None:
        """Step over a value (strings, nested arrays and inline tables) and the rest of its line."""
        depth = 0
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in ('"', "'"):
                self.pos = self._string_end()
                continue
            if char == "#":
                self._skip_comment()
                continue
            if char == "\n":
                if depth == 0:
                    return
                self.line += 1
            elif char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
            self.pos += 1

    def _string_end(self) -> int:
        """The position after the string starting at `pos`; counts the lines it spans."""
        quote = self.text[self.pos]
        triple = self.text.startswith(quote * 3, self.pos)
        position = self.pos + (3 if triple else 1)
        while position < len(self.text):
            char = self.text[position]
            if char == "\\" and quote == '"':
                if self.text[position + 1] == "\n":
                    self.line += 1
                position += 2
                continue
            if char == "\n":
                self.line += 1
            if char == quote:
                if not triple:
                    return position + 1
                if self.text.startswith(quote * 3, position):
                    end = position + 3
                    # Up to two more quotes belong to the content (`"""a"""""`).
                    while end < len(self.text) and self.text[end] == quote and end < position + 5:
                        end += 1
                    return end
            position += 1
        return position

    def _skip_blank(self) -> bool:
        """Skip whitespace, newlines and comments; False at the end of the text."""
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\n":
                self.line += 1
            elif char == "#":
                self._skip_comment()
                continue
            elif char not in " \t\r":
                return True
            self.pos += 1
        return False

    def _skip_comment(self) -> None:
        end = self.text.find("\n", self.pos)
        self.pos = len(self.text) if end < 0 else end

    def _skip_spaces(self) -> None:
        while self._peek() in (" ", "\t"):
            self.pos += 1

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""


def _unescape(raw: str) -> str:
    def replace(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] in "uU":
            return chr(int(escape[1:], 16))
        return _SIMPLE_ESCAPES.get(escape, escape)

    return _ESCAPE.sub(replace, raw)
