"""The signals that carry Hand tasks between Minds sharing one PostgreSQL database, as
NOTIFYs on `tobe_tasks` (what each one does on the Mind that hears it: `mind.remote.crossing`).
Every signal but progress is sent in the transaction that commits what it tells, so it is
heard only once that is committed."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import String, bindparam, func, select

from mind.remote.model import TaskRecord, TaskState
from mind.store.database import Database
from mind.store.write_tx import WriteTx

log = logging.getLogger(__name__)

TASKS_CHANNEL = "tobe_tasks"
NOTIFY = select(func.pg_notify(TASKS_CHANNEL, bindparam("p", type_=String)))
# Bytes of progress text per signal, well under PostgreSQL's 8000-byte payload limit.
PROGRESS_BYTES = 4000
# Terminals only the Mind decides: its Hand must hear that the task is over.
MIND_SIDE = frozenset({TaskState.CANCELLED, TaskState.TIMED_OUT, TaskState.LOST, TaskState.FAILED})


class SignalKind(StrEnum):
    # A task was recorded for a Hand attached to the Mind `to`.
    OFFER = "offer"
    # A transition was committed.
    CHANGE = "change"
    # A cancel was requested.
    CANCEL = "cancel"
    # The Hand reported progress (nothing written).
    PROGRESS = "progress"


@dataclass(frozen=True)
class TaskSignal:
    node: str
    kind: SignalKind
    task_id: str
    hand_name: str
    to: str = ""
    message: str = ""
    fraction: float | None = None

    def encode(self) -> str:
        return json.dumps(
            {
                "n": self.node,
                "k": self.kind.value,
                "t": self.task_id,
                "h": self.hand_name,
                "to": self.to,
                "m": self.message,
                "f": self.fraction,
            },
            separators=(",", ":"),
        )

    @classmethod
    def decode(cls, payload: str) -> TaskSignal:
        data = json.loads(payload)
        return cls(
            data["n"], SignalKind(data["k"]), data["t"], data["h"], data["to"], data["m"], data["f"]
        )


def clipped(text: str, limit: int = PROGRESS_BYTES) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, on a character boundary."""
    return text.encode()[:limit].decode(errors="ignore")


class TaskSignals:
    """Sends this Mind's task signals (see the module's docstring)."""

    def __init__(self, database: Database, node_id: str) -> None:
        self.database = database
        self.node_id = node_id

    def in_tx(self, tx: WriteTx, kind: SignalKind, record: TaskRecord, to: str = "") -> None:
        """Signal a change in the transaction that commits it (delivered at commit)."""
        signal = TaskSignal(self.node_id, kind, record.id, record.hand_name, to)
        tx.execute(NOTIFY, p=signal.encode())

    async def progress(
        self, task_id: str, hand_name: str, message: str, fraction: float | None
    ) -> None:
        signal = TaskSignal(
            self.node_id, SignalKind.PROGRESS, task_id, hand_name, "", clipped(message), fraction
        )
        try:
            await self.database.write(lambda tx: tx.execute(NOTIFY, p=signal.encode()))
        except Exception as exc:  # progress may be lost, as every ephemeral event
            log.debug("progress of task %s was not signalled: %s", task_id, exc)
