"""Durable log of observations (SQLite in the Awareness data directory).

Every publish is committed before any subscriber sees it, under a `publish_seq` that strictly
increases for the life of the file (AUTOINCREMENT never reuses a number), so a subscriber that
resumes with `after_seq` after a restart of either side misses nothing and sees nothing twice.

LOW/MEDIUM observations wait for their aggregation window as `held` rows, committed before the
adapter's `emit` returns: a crash during the window loses nothing. Publishing held rows inserts
their batch and deletes them in one transaction, so each is published exactly once, whether by
its window, a flush, or the next start. The journal also keeps the read position of `drain`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

from awareness.model import Observation, PublishedBatch, Trust
from tobe.runtime.private_files import private_file

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    publish_seq INTEGER PRIMARY KEY AUTOINCREMENT,
    published_at TEXT NOT NULL,
    observations TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS held (
    held_seq INTEGER PRIMARY KEY AUTOINCREMENT,
    adapter_id TEXT NOT NULL,
    trust TEXT NOT NULL,
    observation TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS positions (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""
_READ = "read"


class Journal:
    def __init__(self, path: Path) -> None:
        private_file(path)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def append(self, observations: list[Observation]) -> PublishedBatch:
        """Commit one batch and return it with its new sequence number."""
        payload = json.dumps([o.as_dict() for o in observations])
        with self._lock:
            seq = self._insert_batch(payload)
        return PublishedBatch(publish_seq=seq, observations=tuple(observations))

    def hold(self, observation: Observation) -> None:
        """Commit an observation that waits for its aggregation window."""
        payload = json.dumps(observation.as_dict())
        with self._lock:
            self._db.execute(
                "INSERT INTO held (adapter_id, trust, observation) VALUES (?, ?, ?)",
                (observation.adapter_id, observation.trust.value, payload),
            )

    def held_keys(self) -> list[tuple[str, Trust]]:
        """The (adapter_id, trust) pairs with held observations, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT adapter_id, trust FROM held GROUP BY adapter_id, trust "
                "ORDER BY MIN(held_seq)"
            ).fetchall()
        return [(adapter_id, Trust(trust)) for adapter_id, trust in rows]

    def publish_held(self, adapter_id: str, trust: Trust) -> PublishedBatch | None:
        """Publish an adapter's held observations of one trust as one batch (None if none)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                rows = self._db.execute(
                    "SELECT held_seq, observation FROM held WHERE adapter_id = ? AND trust = ? "
                    "ORDER BY held_seq",
                    (adapter_id, trust.value),
                ).fetchall()
                if not rows:
                    self._db.execute("COMMIT")
                    return None
                observations = [json.loads(payload) for _, payload in rows]
                seq = self._insert_batch(json.dumps(observations))
                self._db.executemany(
                    "DELETE FROM held WHERE held_seq = ?", [(held_seq,) for held_seq, _ in rows]
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return PublishedBatch(
            publish_seq=seq, observations=tuple(Observation.from_dict(o) for o in observations)
        )

    def _insert_batch(self, payload: str) -> int:
        cursor = self._db.execute(
            "INSERT INTO batches (published_at, observations) VALUES (?, ?)",
            (datetime.now(UTC).isoformat(), payload),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def after(self, seq: int, limit: int = 100) -> list[PublishedBatch]:
        with self._lock:
            rows = self._db.execute(
                "SELECT publish_seq, observations FROM batches WHERE publish_seq > ? "
                "ORDER BY publish_seq LIMIT ?",
                (seq, limit),
            ).fetchall()
        return [_batch(row) for row in rows]

    def head(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT MAX(publish_seq) FROM batches").fetchone()
        return row[0] or 0

    def mark_read(self, seq: int) -> None:
        """Advance the read position (never backwards)."""
        with self._lock:
            self._db.execute(
                "INSERT INTO positions (name, value) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET value = MAX(value, excluded.value)",
                (_READ, seq),
            )

    def drain(self, limit: int) -> list[PublishedBatch]:
        """Published batches not yet read, oldest first; marks them read."""
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM positions WHERE name = ?", (_READ,)
            ).fetchone()
        batches = self.after(row[0] if row else 0, limit)
        if batches:
            self.mark_read(batches[-1].publish_seq)
        return batches


def _batch(row: tuple[int, str]) -> PublishedBatch:
    seq, payload = row
    return PublishedBatch(
        publish_seq=seq,
        observations=tuple(Observation.from_dict(o) for o in json.loads(payload)),
    )
