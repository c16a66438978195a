"""LLM provider API keys kept in the store, sealed, so no config file holds one in plaintext.

A key is sealed with AES-256-GCM under the data directory's secrets key
(`<data dir>/credentials/secrets.key`, 0600, created on first use) with its name as associated
data, and stored in `provider_secrets` under that name (`provider`: the Mind's provider). The
store alone does not reveal a key: a database copied or backed up without the data directory's
credentials is useless to its reader, and a secrets key that does not open a row is an error,
never a silent fallback.

Who may open the store follows the state lock (ARCHITECTURE.md, `mind/management`): the Mind
reads its key at start while it holds the lock; an operator's command writes with
`offline_keys`, which takes the lock without waiting, so a running Mind is refused in one line
(the Mind reads the key only at start, so a change needs its restart anyway). Audit rows name
the action and the provider kind, never the key. `cryptography` is loaded when a key is sealed
or opened: a Mind with no stored key never loads it.
"""

from __future__ import annotations

import base64
import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

from sqlalchemy import Connection, Engine, Row, delete, exc, select

from mind.store.engine import (
    create_read_engine,
    create_write_engine,
    is_sqlite,
    redacted_url,
    sync_url,
)
from mind.store.models import ManagementAudit, ProviderSecret, utcnow
from mind.store.write_tx import table_of
from tobe.api_keys import KeyLookup
from tobe.config import Settings
from tobe.runtime.private_files import create_once, private_directory
from tobe.runtime.statelock import StateLock, StateLockBusy

MAIN = "provider"
KEY_FILE = "secrets.key"
_NONCE_BYTES = 12
HOLDER = "tobe setup (provider key)"


class ProviderKeyError(Exception):
    """A stored key cannot be written or read; the message says what to do."""


@dataclass(frozen=True)
class StoredKey:
    """What may be shown about a stored key: never more than its last four characters."""

    name: str
    kind: str
    last4: str
    updated_at: datetime


def secrets_key_file(data_dir: Path) -> Path:
    return data_dir / "credentials" / KEY_FILE


def _secrets_key(data_dir: Path, *, create: bool) -> bytes | None:
    path = secrets_key_file(data_dir)
    if create and not path.exists():
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        private_directory(path.parent)
        create_once(path, base64.b64encode(AESGCM.generate_key(bit_length=256)) + b"\n")
    try:
        key = base64.b64decode(path.read_bytes().strip(), validate=True)
    except FileNotFoundError:
        return None
    except ValueError:
        key = b""
    if len(key) != 32:
        raise ProviderKeyError(
            f"{path} is not a secrets key (32 bytes, base64); restore it from a backup, or "
            "delete it and store the provider key again with `tobe setup`"
        )
    return key


def seal(secret: str, name: str, key: bytes) -> str:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = os.urandom(_NONCE_BYTES)
    return base64.b64encode(
        nonce + AESGCM(key).encrypt(nonce, secret.encode(), name.encode())
    ).decode()


def unseal(sealed: str, name: str, key: bytes) -> str:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    data = base64.b64decode(sealed)
    try:
        plain = AESGCM(key).decrypt(data[:_NONCE_BYTES], data[_NONCE_BYTES:], name.encode())
    except InvalidTag:
        raise ProviderKeyError(
            f"the stored {name} key does not open with this data directory's secrets key "
            "(a different or replaced credentials/secrets.key); store it again with `tobe setup`"
        ) from None
    return plain.decode()


class ProviderKeys:
    """Sealed keys in one store. The caller holds the state lock (the Mind, or `offline_keys`)."""

    def __init__(self, engine: Engine, data_dir: Path) -> None:
        self._engine = engine
        self._data_dir = data_dir

    def put(self, name: str, kind: str, secret: str, *, actor: str) -> None:
        """Store `secret` under `name`, replacing what was there; audited without the key."""
        sealed = seal(secret, name, _secrets_key(self._data_dir, create=True) or b"")
        with self._engine.begin() as connection:
            connection.execute(delete(ProviderSecret).where(ProviderSecret.name == name))
            connection.execute(
                table_of(ProviderSecret)
                .insert()
                .values(name=name, kind=kind, sealed=sealed, updated_at=utcnow())
            )
            _audit(connection, "provider_key.set", actor, name, kind)

    def delete(self, name: str, *, actor: str) -> bool:
        """Remove the key stored under `name`; False when there was none."""
        with self._engine.begin() as connection:
            removed = connection.execute(
                delete(ProviderSecret).where(ProviderSecret.name == name)
            ).rowcount
            if removed:
                _audit(connection, "provider_key.delete", actor, name, "")
        return bool(removed)

    def read(self, name: str) -> tuple[str, str] | None:
        """(kind, key) stored under `name`, or None."""
        row = self._row(name)
        if row is None:
            return None
        key = _secrets_key(self._data_dir, create=False)
        if key is None:
            raise ProviderKeyError(
                f"a {name} key is stored but {secrets_key_file(self._data_dir)} is missing; "
                "restore it, or store the key again with `tobe setup`"
            )
        return row.kind, unseal(row.sealed, name, key)

    def describe(self, name: str) -> StoredKey | None:
        row = self._row(name)
        if row is None:
            return None
        _kind, secret = self.read(name) or ("", "")
        return StoredKey(name, row.kind, secret[-4:], row.updated_at)

    def _row(self, name: str) -> Row[str, str, datetime] | None:
        query = select(ProviderSecret.kind, ProviderSecret.sealed, ProviderSecret.updated_at)
        with self._engine.connect() as connection:
            return connection.execute(query.where(ProviderSecret.name == name)).first()


def _audit(connection: Connection, action: str, actor: str, name: str, kind: str) -> None:
    details = {"kind": kind} if kind else {}
    connection.execute(
        table_of(ManagementAudit)
        .insert()
        .values(time=utcnow(), action=action, actor=actor, target=name, details=details)
    )


def _locked(settings: Settings) -> StateLock:
    """The state lock, taken without waiting; ProviderKeyError names who holds it."""
    lock = StateLock(settings.data_dir, HOLDER)
    try:
        lock.acquire()
    except StateLockBusy as busy:
        raise ProviderKeyError(
            f"{busy.holder or 'another process'} holds the data directory {settings.data_dir}; "
            "stop the Mind (Ctrl-C in `tobe up`) and run this again — the Mind reads the "
            "provider key only when it starts"
        ) from None
    except OSError as exc:
        raise ProviderKeyError(
            f"cannot use the data directory {settings.data_dir}: {exc.strerror or exc}; "
            "check TOBE_DATA_DIR"
        ) from None
    return lock


def ensure_stopped(settings: Settings) -> None:
    """ProviderKeyError now, before any question is asked, when a Mind holds the lock."""
    _locked(settings).release()


@contextlib.contextmanager
def offline_keys(settings: Settings) -> Iterator[ProviderKeys]:
    """The store's keys while no Mind runs: under the state lock, the store migrated first."""
    from mind.store.migrate import upgrade  # an operator's command: the Mind never needs it

    lock = _locked(settings)
    try:
        try:
            upgrade(settings.store_url)
        except Exception as exc:  # any driver's error: the message says what it was
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            raise ProviderKeyError(
                f"cannot open the database {redacted_url(settings.store_url)}: {reason}; "
                "check TOBE_DATABASE_URL"
            ) from exc
        engine = create_write_engine(settings.store_url)
        try:
            yield ProviderKeys(engine, settings.data_dir)
        finally:
            engine.dispose()
    finally:
        lock.release()


@contextlib.contextmanager
def _reading(settings: Settings) -> Iterator[ProviderKeys | None]:
    """Read access without the state lock; None when the store has no key table (yet)."""
    target = sync_url(settings.store_url)
    if is_sqlite(target) and not Path(target.database or "").exists():
        yield None
        return
    engine = create_read_engine(settings.store_url)
    try:
        yield ProviderKeys(engine, settings.data_dir)
    finally:
        engine.dispose()


def describe_key(settings: Settings, name: str = MAIN) -> StoredKey | None:
    """What may be shown of the key stored under `name` (reads only, like `stored_key`)."""
    with _reading(settings) as keys:
        try:
            return None if keys is None else keys.describe(name)
        except (exc.OperationalError, exc.ProgrammingError):
            return None


def stored_key(settings: Settings, kind: str, name: str = MAIN) -> str | None:
    """The key stored for `kind`, or None: for the Mind at start and for reading commands.

    It only reads (on SQLite a WAL snapshot, never the write lock), so it needs no state lock.
    A store that does not exist yet, or predates `provider_secrets`, holds no key.
    """
    with _reading(settings) as keys:
        try:
            found = None if keys is None else keys.read(name)
        except (exc.OperationalError, exc.ProgrammingError):
            return None
    if found is None or found[0] != kind:
        return None
    return found[1]


def stored_keys(settings: Settings) -> KeyLookup:
    """The keys stored in `settings`' store by kind: the last source `api_keys` asks."""
    return partial(stored_key, settings)
