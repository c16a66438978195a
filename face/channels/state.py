"""The channels' own durable state: one SQLite file, `<data_dir>/channels/state.db` (0600).

It holds what the Mind does not: who on which network is paired with which credential, the
pairing codes waiting for the owner, which thread is which conversation, what was sent under
which idempotency key (so nothing shows twice after a restart), how far each person's events
were followed, and each transport's own values (a sync token, a mailbox position). The
credential secrets of paired people are here, which is why the file is owner-only.

`tobe admin channels` opens the same file to approve a code while the channels process runs:
every write is one short transaction (WAL, busy timeout), and the process reads approvals
from it.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tobe.runtime.private_files import private_directory, private_file

# How long a pairing code waits for the owner.
PAIRING_TTL = timedelta(minutes=10)
# No 0/O, 1/I/L: a code is read aloud or typed from a phone.
_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS senders (
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    principal TEXT NOT NULL,
    credential_id TEXT NOT NULL,
    token TEXT NOT NULL,
    paired_at TEXT NOT NULL,
    PRIMARY KEY (channel, address)
);
CREATE TABLE IF NOT EXISTS pairings (
    code TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    thread TEXT NOT NULL,
    display_name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    approved_at TEXT,
    announced INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS threads (
    channel TEXT NOT NULL,
    thread TEXT NOT NULL,
    address TEXT NOT NULL,
    conversation_key TEXT NOT NULL UNIQUE,
    PRIMARY KEY (channel, thread)
);
CREATE TABLE IF NOT EXISTS sent (
    channel TEXT NOT NULL,
    key TEXT NOT NULL,
    network_id TEXT NOT NULL,
    approval_id TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (channel, key)
);
CREATE INDEX IF NOT EXISTS sent_by_network_id ON sent (channel, network_id);
CREATE TABLE IF NOT EXISTS cursors (
    channel TEXT NOT NULL,
    address TEXT NOT NULL,
    last_event_id INTEGER NOT NULL,
    PRIMARY KEY (channel, address)
);
CREATE TABLE IF NOT EXISTS transport_values (
    channel TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (channel, key)
);
"""


@dataclass(frozen=True)
class Sender:
    """A paired person: their address on one network and the credential they talk with."""

    channel: str
    address: str
    principal: str
    credential_id: str
    token: str


@dataclass(frozen=True)
class Pairing:
    """A code a person was given, waiting for the owner (or approved and not yet told)."""

    code: str
    channel: str
    address: str
    thread: str
    display_name: str
    expires_at: datetime
    approved: bool


class PairingError(Exception):
    """The code cannot be approved: the message says why, for people."""


class ChannelState:
    def __init__(self, path: Path) -> None:
        private_directory(path.parent)
        private_file(path)
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)

    @classmethod
    def at(cls, data_dir: Path) -> ChannelState:
        return cls(state_file(data_dir))

    def close(self) -> None:
        self._db.close()

    def _one(self, sql: str, *args: object) -> tuple[object, ...] | None:
        with self._lock:
            row: tuple[object, ...] | None = self._db.execute(sql, args).fetchone()
            return row

    def _all(self, sql: str, *args: object) -> list[tuple[object, ...]]:
        with self._lock:
            return list(self._db.execute(sql, args).fetchall())

    def _write(self, sql: str, *args: object) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    # Transports' own values.

    def values(self, channel: str) -> TransportValues:
        return TransportValues(self, channel)

    def value(self, channel: str, key: str) -> str | None:
        row = self._one(
            "SELECT value FROM transport_values WHERE channel = ? AND key = ?", channel, key
        )
        return None if row is None else str(row[0])

    def put_value(self, channel: str, key: str, value: str) -> None:
        self._write(
            "INSERT INTO transport_values (channel, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (channel, key) DO UPDATE SET value = excluded.value",
            channel,
            key,
            value,
        )

    # Paired people.

    def sender(self, channel: str, address: str) -> Sender | None:
        row = self._one(
            "SELECT channel, address, principal, credential_id, token FROM senders "
            "WHERE channel = ? AND address = ?",
            channel,
            address,
        )
        return None if row is None else Sender(*(str(value) for value in row))

    def senders(self, channel: str = "") -> list[Sender]:
        rows = self._all(
            "SELECT channel, address, principal, credential_id, token FROM senders "
            "WHERE ? = '' OR channel = ? ORDER BY channel, address",
            channel,
            channel,
        )
        return [Sender(*(str(value) for value in row)) for row in rows]

    def paired_at(self, channel: str, address: str) -> datetime | None:
        """When the person was paired (last), for the owner's listing."""
        row = self._one(
            "SELECT paired_at FROM senders WHERE channel = ? AND address = ?", channel, address
        )
        return None if row is None else datetime.fromisoformat(str(row[0]))

    def forget_sender(self, channel: str, address: str) -> Sender | None:
        """Unpair a person; their threads stay bound, so pairing again continues them."""
        sender = self.sender(channel, address)
        if sender is not None:
            self._write("DELETE FROM senders WHERE channel = ? AND address = ?", channel, address)
            self._write("DELETE FROM cursors WHERE channel = ? AND address = ?", channel, address)
        return sender

    # Pairing codes.

    def open_pairing(
        self, channel: str, address: str, thread: str, display_name: str, now: datetime
    ) -> tuple[Pairing, bool]:
        """The person's waiting code, or a new one; True when it is new (tell them once)."""
        waiting = self._pairing(
            "channel = ? AND address = ? AND approved_at IS NULL AND expires_at > ?",
            channel,
            address,
            _iso(now),
        )
        if waiting is not None:
            return waiting, False
        code = "-".join("".join(secrets.choice(_CODE_ALPHABET) for _ in range(4)) for _ in range(2))
        self._write(
            "INSERT INTO pairings (code, channel, address, thread, display_name, created_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            code,
            channel,
            address,
            thread,
            display_name,
            _iso(now),
            _iso(now + PAIRING_TTL),
        )
        pairing = self.pairing(code)
        assert pairing is not None
        return pairing, True

    def pairing(self, code: str) -> Pairing | None:
        return self._pairing("code = ?", normal_code(code))

    def pending_pairings(self, now: datetime) -> list[Pairing]:
        rows = self._all(
            f"SELECT {_PAIRING_COLUMNS} FROM pairings WHERE approved_at IS NULL "
            "AND expires_at > ? ORDER BY created_at",
            _iso(now),
        )
        return [_pairing_row(row) for row in rows]

    def approve_pairing(
        self, code: str, principal: str, credential_id: str, token: str, now: datetime
    ) -> Sender:
        """Pair the code's person with the credential made for them, in one transaction."""
        pairing = self.pairing(code)
        check_approvable(pairing, code, now)
        assert pairing is not None
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "UPDATE pairings SET approved_at = ? WHERE code = ?", (_iso(now), pairing.code)
                )
                self._db.execute(
                    "INSERT INTO senders (channel, address, principal, credential_id, token, "
                    "paired_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (channel, address) DO "
                    "UPDATE SET principal = excluded.principal, credential_id = "
                    "excluded.credential_id, token = excluded.token, paired_at = "
                    "excluded.paired_at",
                    (pairing.channel, pairing.address, principal, credential_id, token, _iso(now)),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return Sender(pairing.channel, pairing.address, principal, credential_id, token)

    def unannounced(self, channel: str) -> list[Pairing]:
        """Approved pairings whose person has not been told yet."""
        rows = self._all(
            f"SELECT {_PAIRING_COLUMNS} FROM pairings WHERE channel = ? AND approved_at IS NOT "
            "NULL AND announced = 0 ORDER BY approved_at",
            channel,
        )
        return [_pairing_row(row) for row in rows]

    def announced(self, code: str) -> None:
        self._write("UPDATE pairings SET announced = 1 WHERE code = ?", code)

    def _pairing(self, where: str, *args: object) -> Pairing | None:
        row = self._one(f"SELECT {_PAIRING_COLUMNS} FROM pairings WHERE {where}", *args)
        return None if row is None else _pairing_row(row)

    # Threads and conversations.

    def conversation_for(self, channel: str, thread: str) -> str | None:
        row = self._one(
            "SELECT conversation_key FROM threads WHERE channel = ? AND thread = ?",
            channel,
            thread,
        )
        return None if row is None else str(row[0])

    def bind_thread(self, channel: str, thread: str, address: str, conversation_key: str) -> None:
        self._write(
            "INSERT OR IGNORE INTO threads (channel, thread, address, conversation_key) "
            "VALUES (?, ?, ?, ?)",
            channel,
            thread,
            address,
            conversation_key,
        )

    def threads_of(self, channel: str, address: str) -> dict[str, str]:
        """The person's conversations on this channel: conversation key → thread."""
        rows = self._all(
            "SELECT conversation_key, thread FROM threads WHERE channel = ? AND address = ?",
            channel,
            address,
        )
        return {str(key): str(thread) for key, thread in rows}

    # What was sent.

    def sent(self, channel: str, key: str) -> str | None:
        """The network's id of what was sent under `key`, if it was."""
        row = self._one("SELECT network_id FROM sent WHERE channel = ? AND key = ?", channel, key)
        return None if row is None else str(row[0])

    def record_sent(self, channel: str, key: str, network_id: str, approval_id: str = "") -> None:
        self._write(
            "INSERT INTO sent (channel, key, network_id, approval_id) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (channel, key) DO UPDATE SET network_id = excluded.network_id",
            channel,
            key,
            network_id,
            approval_id,
        )

    def approval_asked_by(self, channel: str, network_id: str) -> str | None:
        """The approval whose request was sent as `network_id`, if one was."""
        row = self._one(
            "SELECT approval_id FROM sent WHERE channel = ? AND network_id = ? AND "
            "approval_id != ''",
            channel,
            network_id,
        )
        return None if row is None else str(row[0])

    # How far each person's events were followed.

    def cursor(self, channel: str, address: str) -> int | None:
        row = self._one(
            "SELECT last_event_id FROM cursors WHERE channel = ? AND address = ?",
            channel,
            address,
        )
        return None if row is None else int(str(row[0]))

    def advance(self, channel: str, address: str, event_id: int) -> None:
        self._write(
            "INSERT INTO cursors (channel, address, last_event_id) VALUES (?, ?, ?) "
            "ON CONFLICT (channel, address) DO UPDATE SET last_event_id = "
            "max(last_event_id, excluded.last_event_id)",
            channel,
            address,
            event_id,
        )


def state_file(data_dir: Path) -> Path:
    """Where the channels' state of `data_dir` is (it may not exist yet)."""
    return data_dir / "channels" / "state.db"


class TransportValues:
    """One transport's `TransportState` in the channels' state database."""

    def __init__(self, state: ChannelState, channel: str) -> None:
        self._state = state
        self._channel = channel

    def get(self, key: str) -> str | None:
        return self._state.value(self._channel, key)

    def put(self, key: str, value: str) -> None:
        self._state.put_value(self._channel, key, value)


def normal_code(code: str) -> str:
    """`abcd efgh`, `ABCDEFGH` and `ABCD-EFGH` are the same code."""
    letters = "".join(ch for ch in code.upper() if ch.isalnum())
    return f"{letters[:4]}-{letters[4:]}" if len(letters) == 8 else code.strip().upper()


def check_approvable(pairing: Pairing | None, code: str, now: datetime) -> None:
    if pairing is None:
        raise PairingError(
            f"no pairing code {code!r} is waiting: check the code the person was sent "
            "(`tobe admin channels list` shows the waiting ones)"
        )
    if pairing.approved:
        raise PairingError(f"pairing code {pairing.code} was approved already")
    if pairing.expires_at <= now:
        raise PairingError(
            f"pairing code {pairing.code} expired at {pairing.expires_at:%H:%M} UTC: the person "
            "gets a new code when they write again"
        )


_PAIRING_COLUMNS = "code, channel, address, thread, display_name, expires_at, approved_at"


def _pairing_row(row: tuple[object, ...]) -> Pairing:
    code, channel, address, thread, display_name, expires_at, approved_at = row
    return Pairing(
        code=str(code),
        channel=str(channel),
        address=str(address),
        thread=str(thread),
        display_name=str(display_name),
        expires_at=datetime.fromisoformat(str(expires_at)),
        approved=approved_at is not None,
    )


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")
