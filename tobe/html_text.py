"""Readable text from HTML, for adapters whose sources send markup (feed entries, mail bodies).

Observations carry text, never markup: the model reads it, and nothing in it should render.
Tags are dropped (with the contents of scripts, styles and document heads), character
references decoded, block elements put on lines of their own, whitespace collapsed and blank
lines removed.
"""

from __future__ import annotations

from html.parser import HTMLParser

_BLOCKS = frozenset(
    "address article aside blockquote br dd div dl dt figcaption figure footer h1 h2 h3 h4 h5 h6 "
    "header hr li main nav ol p pre section table tr ul".split()
)
_HIDDEN = frozenset({"script", "style", "template", "head", "title"})


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


def html_to_text(markup: str) -> str:
    """The visible text of an HTML document or fragment, one block per line."""
    collector = _TextCollector()
    collector.feed(markup)
    collector.close()
    lines = (" ".join(line.split()) for line in "".join(collector.parts).splitlines())
    return "\n".join(line for line in lines if line)
