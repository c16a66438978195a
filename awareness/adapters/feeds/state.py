"""What the adapter remembers of each feed across restarts, in `data/feeds.json`.

Per feed URL: the entry ids already seen, the validators of its last document, and its status
(the last successful fetch, the last error). The ids are bounded: an id is dropped only after
SEEN_PER_FEED newer ones, and never while it is still in the feed's latest document, so the
file cannot grow forever and an entry still published is never observed twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from awareness.adapter import AdapterContext

from .fetch import Validators

STATE_FILE = "feeds.json"
# Far above the size of a usual feed (10 to 100 entries).
SEEN_PER_FEED = 1000


@dataclass
class FeedState:
    # Oldest first: the ids longest absent from the feed are dropped first.
    seen: list[str] = field(default_factory=list)
    etag: str = ""
    last_modified: str = ""
    title: str = ""
    # ISO 8601 times; None until the first successful fetch / the first error.
    last_success: str | None = None
    last_error: str = ""
    last_error_at: str | None = None
    # Whether the latest fetch succeeded.
    ok: bool = False

    @property
    def baselined(self) -> bool:
        """Whether the feed was ever read: its entries from then on are news."""
        return self.last_success is not None

    @property
    def validators(self) -> Validators:
        return Validators(etag=self.etag, last_modified=self.last_modified)

    @validators.setter
    def validators(self, validators: Validators) -> None:
        self.etag, self.last_modified = validators.etag, validators.last_modified

    def remember(self, present: Iterable[str]) -> None:
        """Record `present` (ids of the latest document now seen) as the newest ids."""
        newest = list(dict.fromkeys(present))
        current = set(newest)
        kept = [entry_id for entry_id in self.seen if entry_id not in current] + newest
        self.seen = kept[-max(SEEN_PER_FEED, len(newest)) :]

    def succeeded(self, at: str, title: str) -> None:
        self.last_success, self.ok = at, True
        if title:
            self.title = title

    def failed(self, at: str, error: str) -> None:
        self.last_error, self.last_error_at, self.ok = error, at, False


def load(context: AdapterContext) -> dict[str, FeedState]:
    document: dict[str, dict[str, Any]] = context.load_json(STATE_FILE) or {}
    known = FeedState.__dataclass_fields__
    return {
        url: FeedState(**{k: v for k, v in fields.items() if k in known})
        for url, fields in document.items()
    }


def save(context: AdapterContext, states: dict[str, FeedState], urls: Iterable[str]) -> None:
    """Save the states of the configured `urls`; feeds no longer configured are forgotten."""
    context.save_json(STATE_FILE, {url: asdict(states[url]) for url in urls if url in states})
