"""HTML to readable Markdown: the article of a page without its navigation, menus and footers.

trafilatura does the extraction (main-content detection, Markdown output with links, tables
and code blocks); links are made absolute first, against the page's URL, so the model can
follow them. trafilatura and its dependencies take a while to import: they are imported here,
on the first page, so a Hand that never fetches does not pay for them.
"""

from __future__ import annotations

import copy

import lxml.etree
import lxml.html


def _document(body: bytes, url: str, charset: str | None) -> lxml.html.HtmlElement | None:
    try:
        parser = lxml.html.HTMLParser(encoding=charset) if charset else None
    except LookupError:  # a charset lxml does not know: let it find the page's own
        parser = None
    try:
        document = lxml.html.document_fromstring(body, parser=parser)
    except (lxml.etree.ParserError, ValueError, LookupError):
        return None
    document.make_links_absolute(url, resolve_base_href=True, handle_failures="ignore")
    return document


def _plain_text(document: lxml.html.HtmlElement) -> str:
    for element in document.xpath("//script|//style|//noscript|//template"):
        element.drop_tree()
    lines = (line.strip() for line in document.text_content().splitlines())
    return "\n".join(line for line in lines if line)


def html_to_markdown(body: bytes, url: str, charset: str | None) -> tuple[str, str]:
    """The page's title and its main content as Markdown (its whole text when no article is
    found in it, e.g. a page of a few lines); `charset` is the one the response named (None:
    the page's own `<meta charset>`, else a guess)."""
    import trafilatura

    document = _document(body, url, charset)
    if document is None:
        return "", ""
    title = " ".join((document.findtext(".//title") or "").split())
    markdown = trafilatura.extract(
        copy.deepcopy(document),
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_formatting=True,
        include_images=False,
        include_comments=False,
    )
    return title, markdown or _plain_text(document)
