"""What a terminal shows after a program's output: a VT100 emulator (pyte) fed the raw bytes.

Live regions redraw in place with cursor movements, so the raw output of `tobe chat` holds
the same text several times; only the emulated screen (with the lines scrolled off its top)
says what a person sees.

    terminal = Terminal(columns=100, rows=30)
    renderer = Renderer(Console(file=terminal, force_terminal=True, width=100, height=30))
    ...
    assert terminal.lines().count("Done.") == 1
"""

from __future__ import annotations

import io

import pyte

HISTORY_LINES = 2000


class Terminal(io.TextIOBase):
    """A file a rich Console writes to (newlines as a tty's output post-processing sends them)."""

    def __init__(self, columns: int = 100, rows: int = 30) -> None:
        self.columns = columns
        self.screen = pyte.HistoryScreen(columns, rows, history=HISTORY_LINES)
        self._stream = pyte.Stream(self.screen)

    def write(self, text: str) -> int:
        self._stream.feed(text.replace("\n", "\r\n"))
        return len(text)

    def feed_raw(self, raw: str) -> None:
        """Output read from a pseudo-terminal (its newlines are already `\\r\\n`)."""
        self._stream.feed(raw)

    def lines(self) -> list[str]:
        """Every non-empty line, scrolled off or on screen, right-trimmed, top to bottom."""
        scrolled = [
            "".join(row[x].data for x in range(self.columns)) for row in self.screen.history.top
        ]
        return [line.rstrip() for line in [*scrolled, *self.screen.display] if line.strip()]


def screen_lines(raw: str, columns: int, rows: int) -> list[str]:
    """The lines a terminal of that size shows after `raw` (e.g. a pexpect log)."""
    terminal = Terminal(columns, rows)
    terminal.feed_raw(raw)
    return terminal.lines()
