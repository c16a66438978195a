"""A Mind's part in a database several Minds share: its membership and its leases, started
before it takes any conversation over and stopped after its actors."""

from __future__ import annotations

from dataclasses import dataclass

from mind.cluster.leases import SharedLeases
from mind.cluster.membership import Membership
from mind.store.models import MindNode
from mind.store.write_tx import table_of


@dataclass
class SharedStore:
    membership: Membership
    leases: SharedLeases

    async def join(self) -> None:
        """Take the node lock, then keep the leases (renewal and takeovers)."""
        await self.membership.join()
        await self.leases.start()

    async def advertise(self, address: str) -> None:
        """Publish where the other Minds reach this one (once it serves). Through the store:
        the membership's connection is busy listening."""
        self.membership.address = address
        statement = (
            table_of(MindNode).update().where(MindNode.node_id == self.membership.node_id)
        ).values(address=address)
        await self.leases.database.write(lambda tx: tx.connection.execute(statement))

    async def leave(self) -> None:
        """Give every lease back, then the node lock: the others may take over at once."""
        await self.leases.close()
        await self.membership.leave()
