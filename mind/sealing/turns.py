"""The store side of sealed turns: a key's birth in its own unit, its death in the run's finish.

`begin` writes the key and marks the run sealed with its sensitive tools; `end`, called by
`mind.conversation.runs.finish` inside the run's finish unit, decides: a run that called none
of its sensitive tools keeps its key (its values stay readable); one that called any loses it,
and records which datasets were queried with what status. The key row is deleted so that its
bytes do not stay readable (`WriteTx.delete_securely`, then `WriteTx.scrub_after_commit`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.orm import Session

from mind.sealing.cipher import new_key
from mind.sealing.forms import Sealer
from mind.sealing.keyring import KeyRing, Loader, Queried, SealState
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx

_SEAL_RUN = (
    update(models.Run)
    .where(models.Run.id == bindparam("run_id"))
    .values(sealed=bindparam("sealed"))
)
_REDACT_RUN = (
    update(models.Run)
    .where(models.Run.id == bindparam("run_id"))
    .values(redaction=bindparam("redaction"))
)
_DELETE_KEY = delete(models.TurnKey).where(models.TurnKey.run_id == bindparam("run_id"))
_CALLS = models.ToolProjection.__table__.c
_RUN_CALLS = (
    select(_CALLS.tool_call_id, _CALLS.tool, _CALLS.status)
    .where(_CALLS.run_id == bindparam("run_id"))
    .order_by(_CALLS.admitted_at)
)
_RUN_RESULTS = select(models.Message.payload).where(
    models.Message.run_id == bindparam("run_id"), models.Message.role == "tool"
)


async def seal_run(
    database: Database, ring: KeyRing, run_id: str, sensitive: dict[str, str]
) -> Sealer:
    """Give a started run its key (committed before anything is sealed under it)."""
    key = new_key()

    def unit(tx: WriteTx) -> None:
        tx.insert_values(
            models.TurnKey, {"run_id": run_id, "key": key, "created_at": datetime.now(UTC)}
        )
        tx.execute(_SEAL_RUN, run_id=run_id, sealed=sensitive)

    await database.write(unit)
    ring.add(run_id, key)
    return Sealer(run_id, key, sensitive)


def end(tx: WriteTx, run: Any) -> tuple[Queried, ...] | None:
    """In the finish unit of `run` (a `runs` row, its calls already ended): delete its key when
    it called a sensitive tool and return what it queried; None when it keeps its key (not
    sealed, or no sensitive call)."""
    sensitive: dict[str, str] | None = run.sealed
    if not sensitive:
        return None
    queried = _queried(tx, run.id, sensitive)
    if not queried:
        return None
    tx.delete_securely(_DELETE_KEY, run_id=run.id)
    tx.scrub_after_commit(models.TurnKey.__tablename__)
    tx.execute(_REDACT_RUN, run_id=run.id, redaction=[q.to_json() for q in queried])
    return queried


def _queried(tx: WriteTx, run_id: str, sensitive: dict[str, str]) -> tuple[Queried, ...]:
    """The run's sensitive calls (admitted by it, or answered in it), as datasets and statuses."""
    calls: dict[str, tuple[str, str]] = {}
    for row in tx.rows(_RUN_CALLS, run_id=run_id):
        calls[row.tool_call_id] = (row.tool, row.status)
    for row in tx.rows(_RUN_RESULTS, run_id=run_id):
        payload = row.payload or {}
        call_id = payload.get("tool_call_id", "")
        calls.setdefault(call_id, (payload.get("tool_name", ""), payload.get("status", "")))
    found = [
        Queried(sensitive[tool], status) for tool, status in calls.values() if tool in sensitive
    ]
    return tuple(dict.fromkeys(found))


def store_loader(database: Database) -> Loader:
    """Read a sealed run's state from the store (for runs sealed before this process)."""

    def query(session: Session, run_id: str) -> SealState:
        key = session.get(models.TurnKey, run_id)
        if key is not None:
            return SealState(key.key)
        run = session.get(models.Run, run_id)
        redaction = run.redaction if run is not None and run.redaction else []
        return SealState(None, tuple(Queried.from_json(item) for item in redaction))

    return lambda run_id: database.read_now(lambda session: query(session, run_id))
