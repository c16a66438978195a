"""Readable text from an HTML mail body, for mail that has no text/plain part."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCKS = {"br", "p", "div", "li", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "hr"}
_HIDDEN = {"script", "style", "head", "title"}


class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Visible text with block elements on lines of their own and whitespace collapsed."""
    collector = _TextCollector()
    collector.feed(html)
    collector.close()
    lines = (
        re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(collector.parts).split("\n")
    )
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
