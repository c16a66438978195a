"""When each credential last authenticated, kept to the minute without a write per call.

`tobe admin credentials list` shows it, so an operator sees which devices are still in use.
Every call authenticates, so writing each time would put the store's writer on every call's
path; instead a credential's `last_seen_at` is written at most once per `INTERVAL` per
process (the first authentication after that, usually a connection opening), and the answer
is never held up by anything but that one small UPDATE.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from sqlalchemy import update

from mind.credentials.identity import Identity
from mind.store.database import Database
from mind.store.models import Credential
from mind.store.write_tx import WriteTx

INTERVAL = 60.0

Authenticate = Callable[[str], Awaitable[Identity | None]]


class LastSeen:
    """Records `last_seen_at` of credentials that authenticated, once per INTERVAL each."""

    def __init__(
        self,
        database: Database,
        *,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._database = database
        self._interval = interval
        self._clock = clock
        # Credential id → when this process last wrote its `last_seen_at` (monotonic).
        self._written: dict[str, float] = {}

    async def seen(self, credential_id: str) -> None:
        """`credential_id` authenticated now; writes it unless written within INTERVAL."""
        now = self._clock()
        written = self._written.get(credential_id)
        if written is not None and now - written < self._interval:
            return
        self._written[credential_id] = now
        at = datetime.now(UTC)

        def unit(tx: WriteTx) -> None:
            tx.session.execute(
                update(Credential)
                .where(Credential.id == credential_id)
                .values(last_seen_at=at)
                .execution_options(synchronize_session=False)
            )

        await self._database.write(unit)

    def recording(self, authenticate: Authenticate) -> Authenticate:
        """`authenticate`, recording each identity it answers with."""

        async def authenticate_and_record(token: str) -> Identity | None:
            identity = await authenticate(token)
            if identity is not None:
                await self.seen(identity.credential_id)
            return identity

        return authenticate_and_record
