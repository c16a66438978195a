"""Feeds: new entries of RSS, Atom and RDF feeds become observations (actor `service`).

Each poll round reads every configured feed (httpx, conditional requests with the ETag and
Last-Modified the server gave last time; feedparser parses) and emits one `feed_entry`
observation per entry not seen before, oldest first, at most `max_entries_per_poll` per feed
and round (the rest wait for the next round). The entries a feed holds at its first successful
fetch are recorded as seen without being observed unless `emit_existing` is set, so
subscribing to a feed does not flood the agent.

A feed that cannot be read (unreachable, an HTTP error, a document that is no feed or holds
nothing usable) is that feed's error, shown by the `feeds` action; the other feeds go on. When
every feed failed in a round, `run` raises: nothing is reachable, and the engine shows the
adapter failed and starts it again after a backoff.

Seen ids are saved in `data/feeds.json` after the entries were emitted, never before: a crash
in between observes those entries again after the restart rather than losing them. The Mind
deduplicates by observation id only, and every emit makes a new one, so such a repeat reaches
the agent; we accept a rare repeat after a crash over news that silently never arrives.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from awareness.adapter import Action, ActionFailed, Adapter, AdapterContext

from . import state
from .fetch import FeedError, Request, Validators, fetch, new_client
from .parse import Entry, Feed, parse_feed
from .state import FeedState

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FeedSource:
    """One configured feed."""

    url: str
    title: str
    trust: str
    request: Request

    @classmethod
    def from_config(cls, item: dict[str, Any]) -> FeedSource:
        auth = None
        if item.get("username"):
            import httpx

            auth = httpx.BasicAuth(item["username"], item.get("password", ""))
        return cls(
            url=item["url"],
            title=item.get("title", ""),
            trust=item.get("trust", "low"),
            request=Request(url=item["url"], headers=dict(item.get("headers", {})), auth=auth),
        )


class EveryFeedFailed(Exception):
    """No feed could be read in a poll round."""


class FeedsAdapter(Adapter):
    description = "RSS, Atom and RDF feeds: each new entry becomes an observation."
    auto_start = False

    def __init__(self, context: AdapterContext) -> None:
        super().__init__(context)
        config = context.config
        self.sources = [FeedSource.from_config(item) for item in config["feeds"]]
        self.poll_interval = float(config["poll_interval"])
        self.timeout = float(config["timeout"])
        self.emit_existing = bool(config["emit_existing"])
        self.max_entries = int(config["max_entries_per_poll"])
        self.states = state.load(context)

    def read_actions(self) -> list[Action]:
        return [
            Action(
                "feeds",
                "Each configured feed: its title, whether its latest fetch worked, the last "
                "successful fetch, the last error and how many entry ids are remembered.",
                self._feeds,
            ),
            Action(
                "entries",
                "The latest entries of one configured feed, fetched now, newest first; `seen` "
                "says whether an entry was already observed (or recorded at subscription).",
                self._entries,
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["url"],
                    "properties": {
                        "url": {"type": "string", "description": "The feed's configured URL."},
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": 100,
                            "description": "How many entries (default 10).",
                        },
                    },
                },
            ),
        ]

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        if not self.sources:
            raise ValueError('config field feeds lists no feed; add one: {"url": "https://..."}')
        urls = [source.url for source in self.sources]
        duplicates = sorted({url for url in urls if urls.count(url) > 1})
        if duplicates:
            raise ValueError(f"config field feeds lists a URL twice: {', '.join(duplicates)}")

    async def run(self) -> None:
        async with new_client(self.timeout) as client:
            while True:
                await self._poll(client)
                await asyncio.sleep(self.poll_interval)

    async def _poll(self, client: httpx.AsyncClient) -> None:
        """One round over every feed; raises EveryFeedFailed when none could be read."""
        outcomes = await asyncio.gather(*(self._read(client, s) for s in self.sources))
        errors: list[str] = []
        for source, outcome in zip(self.sources, outcomes, strict=True):
            feed_state = self.states.setdefault(source.url, FeedState())
            if isinstance(outcome, FeedError):
                if feed_state.ok or feed_state.last_error != str(outcome):
                    log.warning("feed %s: %s", source.url, outcome)
                feed_state.failed(_now(), str(outcome))
                errors.append(f"{source.url}: {outcome}")
            else:
                self._take(source, feed_state, outcome)
            state.save(self.context, self.states, (s.url for s in self.sources))
        if len(errors) == len(self.sources):
            raise EveryFeedFailed(f"no feed could be read: {'; '.join(errors)}")

    async def _read(self, client: httpx.AsyncClient, source: FeedSource) -> Feed | None | FeedError:
        """The feed, None when it has not changed, or why it could not be read."""
        known = self.states.get(source.url, FeedState())
        try:
            document = await fetch(client, source.request, known.validators)
            if document is None:
                return None
            return await asyncio.to_thread(parse_feed, document)
        except FeedError as exc:
            return exc

    def _take(self, source: FeedSource, feed_state: FeedState, feed: Feed | None) -> None:
        """Emit the feed's new entries and record what is now seen."""
        baselined = feed_state.baselined
        feed_state.succeeded(_now(), feed.title if feed else "")
        if feed is None:
            return
        ids = [entry.entry_id for entry in feed.entries]
        if not baselined and not self.emit_existing:
            feed_state.remember(ids)
            feed_state.validators = feed.validators
            return
        seen = set(feed_state.seen)
        new = _oldest_first([entry for entry in feed.entries if entry.entry_id not in seen])
        now, later = new[: self.max_entries], {entry.entry_id for entry in new[self.max_entries :]}
        title = source.title or feed.title or source.url
        for entry in now:
            self.context.emit(
                actor="service",
                trust=source.trust,
                content={"kind": "feed_entry", "feed_url": source.url, "feed_title": title}
                | entry.as_dict(),
                source_key=source.url,
                source_title=title,
            )
        feed_state.remember(entry_id for entry_id in ids if entry_id not in later)
        # Entries left for the next round must not be hidden behind a 304.
        feed_state.validators = Validators() if later else feed.validators

    # -- actions --------------------------------------------------------------------------

    async def _feeds(self, args: dict[str, Any]) -> dict[str, Any]:
        feeds = []
        for source in self.sources:
            known = self.states.get(source.url, FeedState())
            feeds.append(
                {
                    "url": source.url,
                    "title": source.title or known.title,
                    "ok": known.ok,
                    "last_success": known.last_success,
                    "last_error": known.last_error,
                    "last_error_at": known.last_error_at,
                    "entries_seen": len(known.seen),
                }
            )
        return {"feeds": feeds}

    async def _entries(self, args: dict[str, Any]) -> dict[str, Any]:
        source = next((s for s in self.sources if s.url == args["url"]), None)
        if source is None:
            configured = ", ".join(s.url for s in self.sources) or "none"
            raise ActionFailed(
                f"{args['url']!r} is not a configured feed (configured: {configured})"
            )
        try:
            async with new_client(self.timeout) as client:
                document = await fetch(client, source.request)
            assert document is not None, "an unconditional request is never answered 304"
            feed = await asyncio.to_thread(parse_feed, document)
        except FeedError as exc:
            raise ActionFailed(f"feed {source.url} could not be read: {exc}") from None
        seen = set(self.states.get(source.url, FeedState()).seen)
        latest = list(reversed(_oldest_first(feed.entries)))[: args.get("limit", 10)]
        return {
            "url": source.url,
            "title": source.title or feed.title,
            "entries": [entry.as_dict() | {"seen": entry.entry_id in seen} for entry in latest],
        }


def _oldest_first(entries: Sequence[Entry]) -> list[Entry]:
    """By date when every entry has one, else the reverse of document order (newest first)."""
    dated = [(entry.published, entry) for entry in entries if entry.published]
    if len(dated) == len(entries):
        return [entry for _, entry in sorted(dated, key=lambda pair: pair[0])]
    return list(reversed(entries))


def _now() -> str:
    return datetime.now(UTC).isoformat()


ADAPTER = FeedsAdapter
