"""This Mind's place among the Minds sharing one PostgreSQL database.

* Its **node id**: `[mind] node_id`, or one made at the first start and kept in the data
  directory's `node-id` file, so a restarted Mind is the same node.
* Its **node lock**: a session advisory lock on the node id, held on a connection of its own
  for as long as the Mind runs. A second live Mind started with the same id is refused; a
  Mind killed with SIGKILL loses it with its connection, so its restart gets it at once and
  may take its own leases back without waiting for them to run out.
* Its **row** in `mind_nodes`: where the other Minds reach it (`[mind] advertise_address`, or
  the address it listens on).
* **News from the others**: the same connection LISTENs on `tobe_outbox`, which every write
  that appends outbox events notifies at commit with its node id; a notification from another
  node makes this Mind's subscribers read the outbox (`on_outbox`). It also LISTENs on the
  channels of `heard` (the other Minds' ephemeral events, `mind.events.relay`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from mind.errors import WrongState
from mind.store.engine import sync_url
from mind.store.outbox import NOTIFY_CHANNEL

log = logging.getLogger(__name__)

NODE_FILE = "node-id"
WILDCARD_HOSTS = {"", "0.0.0.0", "::", "[::]"}
# Seconds `leave` waits for the listener to stop before closing its connection under it.
LEAVE_WAIT = 5.0


class NodeIdTaken(WrongState):
    def __init__(self, node_id: str) -> None:
        super().__init__(
            f"another running Mind uses node id {node_id!r} on this database; give each Mind "
            "its own ([mind] node_id, or tobe mind serve --node-id)"
        )


def node_id_of(configured: str, data_dir: Path) -> str:
    """The configured node id, else the one kept in `data_dir` (made on first use)."""
    if configured:
        return configured
    path = data_dir / NODE_FILE
    with contextlib.suppress(FileNotFoundError):
        kept = path.read_text(encoding="utf-8").strip()
        if kept:
            return kept
    made = f"mind-{secrets.token_hex(4)}"
    path.write_text(made + "\n", encoding="utf-8")
    return made


def advertised(configured: str, listening: str) -> str:
    """Where the other Minds reach this one; ValueError naming the setting when the address
    it listens on is no address to dial (a wildcard, a Unix socket)."""
    if configured:
        return configured
    host = listening.rpartition(":")[0]
    if listening.startswith("unix:") or host in WILDCARD_HOSTS:
        raise ValueError(
            f"the Mind listens on {listening}, which other Minds cannot dial: set "
            "[mind] advertise_address (TOBE_MIND__ADVERTISE_ADDRESS) to host:port"
        )
    return listening


def libpq_url(url: str) -> str:
    """The store's URL as psycopg takes it (no SQLAlchemy driver name)."""
    return sync_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class Membership:
    """The node lock and the LISTEN connection of one Mind (see the module's docstring)."""

    def __init__(
        self,
        url: str,
        node_id: str,
        on_outbox: Callable[[], None],
        heard: dict[str, Callable[[str], None]] | None = None,
    ) -> None:
        make_url(url)  # a bad URL fails here, not in the background
        self.url = url
        self.node_id = node_id
        self.on_outbox = on_outbox
        # Further channels to LISTEN on, each with what hears its payloads.
        self.heard = dict(heard or {})
        self.address = ""
        self._connection: psycopg.AsyncConnection[tuple[object, ...]] | None = None
        self._task: asyncio.Task[None] | None = None

    async def join(self) -> None:
        """Take the node lock and start hearing the others; NodeIdTaken when another live
        Mind has this node id."""
        connection = await self._connect()
        self._task = asyncio.create_task(self._listen(connection), name="cluster-listen")

    async def _connect(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        connection = await psycopg.AsyncConnection.connect(
            libpq_url(self.url), autocommit=True, connect_timeout=5
        )
        try:
            taken = await connection.execute(
                "SELECT pg_try_advisory_lock(hashtextextended('tobe-node:' || %s, 0))",
                (self.node_id,),
            )
            row = await taken.fetchone()
            if row is None or not row[0]:
                raise NodeIdTaken(self.node_id)
            await connection.execute(
                "INSERT INTO mind_nodes (node_id, address, started_at, seen_at) "
                "VALUES (%s, %s, now(), now()) ON CONFLICT (node_id) DO UPDATE "
                "SET address = excluded.address, started_at = now(), seen_at = now()",
                (self.node_id, self.address),
            )
            for channel in (NOTIFY_CHANNEL, *self.heard):
                await connection.execute(f"LISTEN {channel}")
        except BaseException:
            await connection.close()
            raise
        self._connection = connection
        return connection

    async def _listen(self, connection: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        """Hear the other Minds; when the connection breaks, connect again (1 s doubling to
        10 s) and read the outbox once, since notifications were missed meanwhile."""
        pause = 1.0
        while True:
            try:
                async for notice in connection.notifies():
                    if notice.channel != NOTIFY_CHANNEL:
                        self.heard[notice.channel](notice.payload)
                    elif notice.payload != self.node_id:
                        self.on_outbox()
            except psycopg.Error as exc:
                log.warning("lost the connection that hears the other Minds: %s", exc)
            with contextlib.suppress(psycopg.Error):
                await connection.close()
            while True:
                await asyncio.sleep(pause)
                try:
                    connection = await self._connect()
                except (psycopg.Error, NodeIdTaken) as exc:
                    pause = min(pause * 2, 10.0)
                    log.debug("cannot hear the other Minds yet: %s", exc)
                    continue
                log.info("hears the other Minds again")
                pause = 1.0
                self.on_outbox()
                break

    async def leave(self) -> None:
        if self._task is not None:
            self._task.cancel()
            # psycopg may not deliver a cancellation while it waits on a connection whose
            # server stopped answering: closing the connection below ends the wait then.
            _done, pending = await asyncio.wait({self._task}, timeout=LEAVE_WAIT)
            if pending:
                log.warning("the listener did not stop within %g s; closing it", LEAVE_WAIT)
        if self._connection is not None:
            with contextlib.suppress(psycopg.Error):
                await self._connection.close()  # the node lock goes with the session
