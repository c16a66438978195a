"""Markdown as a Matrix message's HTML: rendered, then cut down to what the spec lets clients show.

The agent writes Markdown; Matrix clients show `formatted_body` (`org.matrix.custom.html`)
and fall back to `body`, which keeps the Markdown source as it was written. Raw HTML in the
Markdown is shown as text, never interpreted (the agent's words may quote HTML that must not
become markup), and the rendered HTML is then sanitised with nh3 to the tags and attributes
the client-server spec recommends (`m.room.message` msgtypes, "HTML" section): a link keeps
only a web or mail scheme, an image only an `mxc://` source (clients load nothing else).
"""

from __future__ import annotations

from typing import Any

import nh3
from markdown_it import MarkdownIt

HTML_FORMAT = "org.matrix.custom.html"

# The client-server spec's recommended tags and their attributes.
_TAGS = {
    "font", "del", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "p", "a", "ul", "ol",
    "sup", "sub", "li", "b", "i", "u", "strong", "em", "s", "code", "hr", "br", "div",
    "table", "thead", "tbody", "tr", "th", "td", "caption", "pre", "span", "img", "details",
    "summary",
}  # fmt: skip
_ATTRIBUTES = {
    "font": {"data-mx-bg-color", "data-mx-color", "color"},
    "span": {"data-mx-bg-color", "data-mx-color", "data-mx-spoiler"},
    "a": {"name", "target", "href"},
    "img": {"width", "height", "alt", "title", "src"},
    "ol": {"start"},
    "code": {"class"},
}
_LINK_SCHEMES = {"https", "http", "ftp", "mailto", "magnet", "mxc"}

_markdown = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def _allowed_value(tag: str, attribute: str, value: str) -> str | None:
    if tag == "img" and attribute == "src":
        return value if value.startswith("mxc://") else None
    if tag == "a" and attribute == "href" and value.startswith("mxc://"):
        return None
    if tag == "code" and attribute == "class":
        return value if value.startswith("language-") else None
    return value


def to_html(markdown: str) -> str:
    """The sanitised HTML of `markdown`, for `formatted_body`."""
    rendered = _markdown.render(markdown)
    return nh3.clean(
        rendered,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        attribute_filter=_allowed_value,
        url_schemes=_LINK_SCHEMES,
        link_rel=None,
    ).strip()


def text_content(markdown: str) -> dict[str, Any]:
    """An `m.text` message's content for `markdown`: the source as `body`, the HTML beside it."""
    return {
        "msgtype": "m.text",
        "body": markdown,
        "format": HTML_FORMAT,
        "formatted_body": to_html(markdown),
    }
