"""Turning a fetched document into a feed title and its usable entries, with feedparser.

feedparser reads RSS 0.9x/1.0 (RDF)/2.0 and Atom, and recovers what it can from the malformed
documents found in the wild (`bozo`). A document is this feed's error when nothing usable comes
out of it; an entry that cannot be identified (no id, link or title) is skipped on its own.
"""

from __future__ import annotations

import calendar
import hashlib
import io
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tobe.html_text import html_to_text

from .fetch import Document, FeedError, Validators

MAX_SUMMARY_CHARS = 4000
MAX_TITLE_CHARS = 500
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Entry:
    entry_id: str
    title: str
    link: str
    # When it was published (else last updated), in UTC; None when the feed gives neither.
    published: datetime | None
    author: str
    summary: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry_id,
            "title": self.title,
            "link": self.link,
            "published": self.published.isoformat() if self.published else None,
            "author": self.author,
            "summary": self.summary,
        }


@dataclass(frozen=True)
class Feed:
    title: str
    # In document order (most feeds list the newest first).
    entries: list[Entry]
    # What to send with the next request of this feed.
    validators: Validators


def parse_feed(document: Document) -> Feed:
    """The feed in `document`; FeedError when it is not a feed or nothing usable is in it."""
    import feedparser  # loaded by the first feed read, not with Awareness

    try:
        # A BytesIO, never a str or bytes: feedparser would read those as a path or a URL.
        parsed = feedparser.parse(io.BytesIO(document.body), response_headers=document.headers)
        entries = _usable_entries(parsed)
    except Exception as exc:
        raise FeedError(f"the document could not be parsed: {type(exc).__name__}: {exc}") from None
    if not parsed.get("version") and not entries:
        raise FeedError(f"not an RSS, Atom or RDF feed{_reason(parsed)}")
    if parsed.get("bozo") and not entries:
        raise FeedError(f"malformed feed with no usable entries{_reason(parsed)}")
    return Feed(
        title=_text(parsed.feed, "title", MAX_TITLE_CHARS),
        entries=entries,
        validators=document.validators,
    )


def _reason(parsed: Any) -> str:
    error = parsed.get("bozo_exception")
    return f": {error}" if error else ""


def _usable_entries(parsed: Any) -> list[Entry]:
    feed_author = str(parsed.feed.get("author") or "")
    entries: list[Entry] = []
    ids: set[str] = set()
    for index, raw in enumerate(parsed.entries):
        try:
            entry = _entry(raw, feed_author)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            log.warning("skipped entry %d: %s: %s", index, type(exc).__name__, exc)
            continue
        if entry is None:
            log.debug("skipped entry %d: it has no id, link or title", index)
        elif entry.entry_id not in ids:
            ids.add(entry.entry_id)
            entries.append(entry)
    return entries


def _entry(raw: Any, feed_author: str) -> Entry | None:
    entry_id = str(raw.get("id") or "").strip()
    link = str(raw.get("link") or "").strip()
    title = _text(raw, "title", MAX_TITLE_CHARS)
    if not (entry_id or link or title):
        return None
    stamp = raw.get("published_parsed") or raw.get("updated_parsed")
    published = datetime.fromtimestamp(calendar.timegm(stamp), UTC) if stamp else None
    if not entry_id:
        entry_id = link or _digest(title, published)
    return Entry(
        entry_id=entry_id,
        title=title,
        link=link,
        published=published,
        author=str(raw.get("author") or feed_author),
        summary=_summary(raw),
    )


def _digest(title: str, published: datetime | None) -> str:
    """An id for an entry that has neither id nor link: stable while its title and date are."""
    stamp = published.isoformat() if published else ""
    return "sha256:" + hashlib.sha256(f"{title}\n{stamp}".encode()).hexdigest()


def _summary(raw: Any) -> str:
    if raw.get("summary"):
        detail = raw.get("summary_detail") or (raw.get("content") or [{}])[0]
        return _cut(_plain(str(raw["summary"]), detail), MAX_SUMMARY_CHARS)
    for content in raw.get("content") or []:
        if content.get("value"):
            return _cut(_plain(str(content["value"]), content), MAX_SUMMARY_CHARS)
    return ""


def _text(item: Any, key: str, limit: int) -> str:
    value = item.get(key)
    if not value:
        return ""
    return _cut(_plain(str(value), item.get(f"{key}_detail")), limit)


def _plain(value: str, detail: Any) -> str:
    """The text of `value`; feedparser says in its detail whether it is HTML or plain text."""
    kind = str((detail or {}).get("type") or "text/html")
    if kind == "text/plain":
        return value.strip()
    return html_to_text(value)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
