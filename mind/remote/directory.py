"""Which Hands are attached to the other Minds that share one PostgreSQL database.

A Mind's HandHub holds only the streams that dialled it. So that the owner of a conversation
can offer the tools of a Hand attached elsewhere, each Mind writes its attachments to
`attached_hands` (`attached`, `tools_changed`, `detached`: the last removes only its own row,
by node and stream) and NOTIFYs `tobe_hands` in the same transaction; the others reload their
cache of the rows when they hear it, and every `[mind] lease_seconds` besides.

An attachment counts only while its Mind is alive: its node's `mind_nodes.seen_at`, renewed
every third of the lease, is within three leases. A Mind killed with SIGKILL leaves rows that
stop counting that way, and its next start removes them (`start`).

On SQLite one Mind holds every Hand: `NoDirectory` knows of none elsewhere and writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import String, bindparam, func, select, text

from mind.remote.hub import HandConnection
from mind.remote.model import ToolDecl
from mind.store.database import Database
from mind.store.models import AttachedHand, utcnow
from mind.store.write_tx import WriteTx, table_of
from mind.tools.base import Effect

log = logging.getLogger(__name__)

HANDS_CHANNEL = "tobe_hands"
NOTIFY = select(func.pg_notify(HANDS_CHANNEL, bindparam("node", type_=String)))
# A node seen within this many leases is alive.
LIVE_LEASES = 3

_HANDS = table_of(AttachedHand)

_LIVE = text(
    "SELECT h.name, h.node_id, h.instance_id, h.hand_id, h.principal, h.serves, h.tools, "
    "h.attached_at FROM attached_hands h JOIN mind_nodes n ON n.node_id = h.node_id "
    "WHERE h.node_id <> :node AND n.seen_at > now() - make_interval(secs => :window)"
)


@dataclass(frozen=True)
class RemoteHand:
    """A Hand attached to another Mind (`node_id`)."""

    name: str
    node_id: str
    instance_id: str
    hand_id: str
    principal: str
    serves: frozenset[str]
    tools: dict[str, ToolDecl]
    attached_at: datetime

    def may_serve(self, audience: Iterable[str]) -> bool:
        """As `HandConnection.may_serve`."""
        return "*" in self.serves or not self.serves.isdisjoint(audience)


def tool_rows(tools: dict[str, ToolDecl]) -> list[dict[str, Any]]:
    return [
        {
            "name": decl.name,
            "description": decl.description,
            "parameters": decl.parameters,
            "effect": decl.effect.value,
            "background": decl.background,
            "decision_template": decl.decision_template,
            "sensitive": decl.sensitive,
            "dataset": decl.dataset,
        }
        for decl in tools.values()
    ]


def tools_of(rows: list[dict[str, Any]]) -> dict[str, ToolDecl]:
    return {
        row["name"]: ToolDecl(
            name=row["name"],
            description=row["description"],
            parameters=row["parameters"],
            effect=Effect(row["effect"]),
            background=row["background"],
            decision_template=row["decision_template"],
            sensitive=row["sensitive"],
            dataset=row["dataset"],
        )
        for row in rows
    }


class NoDirectory:
    """One Mind holds every Hand (SQLite): none is attached elsewhere."""

    node_id = ""

    async def start(self) -> None:
        """Nothing to load."""

    async def close(self) -> None:
        """Nothing to remove."""

    async def attached(self, connection: HandConnection) -> None:
        """Nobody else to tell."""

    async def tools_changed(self, connection: HandConnection) -> None:
        """Nobody else to tell."""

    async def detached(self, connection: HandConnection) -> None:
        """Nobody else to tell."""

    def hands(self) -> list[RemoteHand]:
        return []

    def get(self, name: str) -> RemoteHand | None:
        return None


class HandDirectory(NoDirectory):
    """This Mind's attachments in `attached_hands`, and the live ones of the other Minds."""

    def __init__(self, database: Database, node_id: str, lease_seconds: float) -> None:
        self.database = database
        self.node_id = node_id
        self.lease_seconds = lease_seconds
        self._elsewhere: dict[str, RemoteHand] = {}
        self._wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- this Mind's rows -----------------------------------------------------------------

    async def start(self) -> None:
        """Remove the rows an earlier run of this node left, load the others', keep them."""
        await self.database.write(self._forget_node)
        await self.reload()
        self._task = asyncio.create_task(self._keep(), name="hand-directory")

    async def close(self) -> None:
        """Stop reloading, and remove this node's rows: its streams end with it."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.database.write(self._forget_node)

    def _forget_node(self, tx: WriteTx) -> None:
        tx.execute(_HANDS.delete().where(_HANDS.c.node_id == self.node_id))
        tx.execute(NOTIFY, node=self.node_id)

    async def attached(self, connection: HandConnection) -> None:
        """The stream holds the Hand's name on this Mind now (the latest attach wins)."""
        # Imported here: a Mind on SQLite, which has no directory, never loads this dialect.
        from sqlalchemy.dialects.postgresql import insert

        values = {
            "name": connection.name,
            "node_id": self.node_id,
            "instance_id": connection.instance_id,
            "hand_id": connection.hand_id,
            "principal": connection.principal,
            "serves": sorted(connection.serves),
            "tools": tool_rows(connection.tools),
            "attached_at": utcnow(),
        }
        statement = (
            insert(_HANDS)
            .values(**values)
            .on_conflict_do_update(
                index_elements=[_HANDS.c.name],
                set_={k: v for k, v in values.items() if k != "name"},
            )
        )
        await self._write("attach", connection, statement)

    async def tools_changed(self, connection: HandConnection) -> None:
        statement = (
            _HANDS.update()
            .where(self._own_row(connection))
            .values(tools=tool_rows(connection.tools))
        )
        await self._write("change the tools of", connection, statement)

    async def detached(self, connection: HandConnection) -> None:
        """Remove the stream's row; a newer attach of the name (here or elsewhere) stays."""
        await self._write("detach", connection, _HANDS.delete().where(self._own_row(connection)))

    def _own_row(self, connection: HandConnection) -> Any:
        return (
            (_HANDS.c.name == connection.name)
            & (_HANDS.c.node_id == self.node_id)
            & (_HANDS.c.instance_id == connection.instance_id)
            & (_HANDS.c.hand_id == connection.hand_id)
        )

    async def _write(self, what: str, connection: HandConnection, statement: Any) -> None:
        """Write and tell the others; a failure is logged (the Hand still serves this Mind,
        and its row is written again at its next attach)."""

        def unit(tx: WriteTx) -> None:
            tx.connection.execute(statement)
            tx.execute(NOTIFY, node=self.node_id)

        try:
            await self.database.write(unit)
        except Exception as exc:
            log.warning("could not %s Hand %s in the shared store: %s", what, connection.name, exc)

    # -- the others' ----------------------------------------------------------------------

    def heard(self, payload: str) -> None:
        """A notification on `HANDS_CHANNEL` (the payload is the writer's node id)."""
        if payload != self.node_id:
            self._wanted.set()

    def hands(self) -> list[RemoteHand]:
        return list(self._elsewhere.values())

    def get(self, name: str) -> RemoteHand | None:
        return self._elsewhere.get(name)

    async def reload(self) -> None:
        window = LIVE_LEASES * self.lease_seconds
        found = await self.database.read(
            lambda session: session.execute(_LIVE, {"node": self.node_id, "window": window}).all()
        )
        self._elsewhere = {
            row.name: RemoteHand(
                name=row.name,
                node_id=row.node_id,
                instance_id=row.instance_id,
                hand_id=row.hand_id,
                principal=row.principal,
                serves=frozenset(row.serves),
                tools=tools_of(row.tools),
                attached_at=row.attached_at,
            )
            for row in found
        }

    async def _keep(self) -> None:
        """Reload when told, and every lease besides (a killed Mind's rows stop counting)."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wanted.wait(), self.lease_seconds)
            self._wanted.clear()
            try:
                await self.reload()
            except Exception as exc:
                log.warning("could not read the Hands attached to the other Minds: %s", exc)
