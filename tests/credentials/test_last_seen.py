"""A credential's `last_seen_at` follows its authentications, written at most once a minute."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from mind.credentials import issue, store_authenticator
from mind.credentials.last_seen import INTERVAL, LastSeen
from mind.store.database import Database
from mind.store.models import Credential


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def last_seen(database: Database, credential_id: str) -> datetime | None:
    def read(session: Session) -> datetime | None:
        row = session.get(Credential, credential_id)
        assert row is not None
        return row.last_seen_at

    return await database.read(read)


async def test_authenticating_records_when_a_credential_was_last_seen_once_a_minute(
    database: Database,
) -> None:
    credential, token = await database.write(
        lambda tx: issue(tx.session, kind="client", principal="alice", scopes=["chat"])
    )
    clock = Clock()
    authenticate = LastSeen(database, clock=clock).recording(store_authenticator(database))
    assert await last_seen(database, credential.id) is None

    assert await authenticate(token) is not None
    first = await last_seen(database, credential.id)
    assert first is not None

    clock.now += INTERVAL - 1
    assert await authenticate(token) is not None
    assert await last_seen(database, credential.id) == first  # not written again yet

    clock.now += 1
    assert await authenticate(token) is not None
    later = await last_seen(database, credential.id)
    assert later is not None and later > first


async def test_a_refused_token_records_nothing(database: Database) -> None:
    credential, token = await database.write(
        lambda tx: issue(tx.session, kind="client", principal="alice", scopes=["chat"])
    )
    authenticate = LastSeen(database).recording(store_authenticator(database))
    assert await authenticate(token + "x") is None
    assert await last_seen(database, credential.id) is None
