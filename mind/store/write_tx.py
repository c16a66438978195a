"""The open transaction a unit of work runs in (`mind.store.database`).

A unit is a plain synchronous function `unit(tx: WriteTx) -> T`; whichever writer runs it
(`mind.store.group_writer` on SQLite, `mind.store.pool_writer` on PostgreSQL) hands it a
`WriteTx` over the connection of its transaction. Hot paths write with Core statements on the
driver's cursor (`mind.store.statements`); anything else may use the ORM session joined to the
same transaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Delete, Insert, Table
from sqlalchemy.orm import Session
from sqlalchemy.orm.session import JoinTransactionMode

from mind.store import outbox, statements
from mind.store.engine import is_sqlite_dialect
from mind.store.models import Base, OutboxEvent
from mind.store.statements import Statement

T = TypeVar("T")
R = TypeVar("R", bound=Base)


class WriteTx:
    """The open transaction a unit runs in.

    Hot paths use `execute`, `rows`, `first` and `insert`: module-level Core statements run
    on the driver's cursor (`mind.store.statements`). Anything else may use `session`, an ORM
    session created on first use and joined to the same transaction.
    """

    def __init__(
        self,
        connection: Connection,
        *,
        savepoint: bool,
        fence: Fence | None = None,
        node_id: str = "",
    ) -> None:
        self.connection = connection
        self.events: list[OutboxEvent] = []
        self._dialect = connection.dialect
        self._cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
        self._savepoint = savepoint
        self._session: Session | None = None
        # Tables whose deleted rows must leave no readable bytes once committed.
        self.scrubbed: set[str] = set()
        # Several Minds on one database (`mind.cluster`): the check that this Mind still owns
        # a conversation whose event it appends, once per conversation, and the node id its
        # commit notifies the others with.
        self._fence = fence
        self._fenced: set[str] = set()
        self._node_id = node_id
        self._notified = False

    @property
    def session(self) -> Session:
        if self._session is None:
            # Inside a unit's savepoint the session needs one of its own, so that a failed
            # flush (which rolls the session back) ends only this unit.
            mode: JoinTransactionMode = "create_savepoint" if self._savepoint else "rollback_only"
            self._session = Session(
                bind=self.connection, join_transaction_mode=mode, expire_on_commit=False
            )
        return self._session

    def execute(self, statement: Statement, **values: Any) -> int:
        """Run a statement; returns the number of rows it changed."""
        self._flush()
        prepared = statements.prepared(statement, self._dialect)
        self._cursor.execute(prepared.sql, prepared.bind(values))
        return int(self._cursor.rowcount)

    def delete_securely(self, statement: Delete, **values: Any) -> int:
        """Run a DELETE whose removed bytes must not stay in the database file: on SQLite with
        `secure_delete` on for it (SQLite overwrites what it frees with zeros); PostgreSQL has
        no such switch (see `scrub_after_commit`). Off again afterwards: it costs every
        deletion a write of the freed space."""
        if not is_sqlite_dialect(self._dialect):
            return self.execute(statement, **values)
        self._flush()
        self._cursor.execute("PRAGMA secure_delete=ON")
        try:
            return self.execute(statement, **values)
        finally:
            self._cursor.execute("PRAGMA secure_delete=OFF")

    def scrub_after_commit(self, table: str) -> None:
        """After this unit's commit, leave no older copy of `table`'s deleted rows readable:
        SQLite checkpoints the WAL with TRUNCATE (the rows' older page images live there);
        PostgreSQL runs VACUUM on `table` (dead tuples stay until vacuumed)."""
        self.scrubbed.add(table)

    def rows(self, statement: Statement, **values: Any) -> list[Any]:
        """The rows of a select (named tuples by column key)."""
        self._flush()
        return statements.fetch(self._cursor, statement, self._dialect, values)

    def first(self, statement: Statement, **values: Any) -> Any | None:
        found = self.rows(statement, **values)
        return found[0] if found else None

    def insert(self, row: R) -> R:
        """Insert a new mapped object with one statement instead of the ORM's unit of work;
        returns it, detached, with its primary key and column defaults filled in."""
        table = table_of(type(row))
        given = {
            column.key: value
            for column in table.columns
            if (value := getattr(row, column.key)) is not None
        }
        for key, value in self.insert_values(type(row), given).items():
            if key not in given:  # the row shows what was stored
                setattr(row, key, value)
        return row

    def insert_values(self, model: type[Base], values: dict[str, Any]) -> dict[str, Any]:
        """Insert a row of `model`'s table given as column values (no mapped object to build,
        for rows nobody reads back); returns the values stored, defaults and primary key
        included."""
        self._flush()  # rows added the ORM way go first (foreign keys)
        stored = dict(values)
        statement, returned_keys = _insert_statement(table_of(model), tuple(values))
        prepared = statements.prepared(statement, self._dialect, column_keys=tuple(values))
        for name, _, default in prepared.parameters:
            if name not in stored and default is not None:
                stored[name] = default()
        self._cursor.execute(prepared.sql, prepared.bind(stored))
        if returned_keys:
            stored.update(zip(returned_keys, self._cursor.fetchone(), strict=True))
        return stored

    def event(
        self, type: str, conversation_key: str, audience: list[str], payload: dict[str, Any]
    ) -> int:
        """Append an outbox event in this transaction; returns its id. An event of a
        conversation first passes the fence, if any: only its owner changes its state."""
        if conversation_key and self._fence is not None and conversation_key not in self._fenced:
            self._fence(self, conversation_key)
            self._fenced.add(conversation_key)
        event = outbox.new_event(type, conversation_key, audience, payload)
        if outbox.needs_writer_lock(self._dialect):
            self.execute(outbox.WRITER_LOCK)
            if not self._notified:
                self.execute(outbox.NOTIFY, node=self._node_id)
                self._notified = True
        self.insert(event)
        self.events.append(event)
        return event.id

    def _flush(self) -> None:
        if self._session is not None and (self._session.new or self._session.dirty):
            self._session.flush()

    def _finish(self) -> None:
        """The unit returned: write what its session still holds."""
        if self._session is not None:
            self._session.commit()  # flushes; the transaction itself is the writer's
            self._session.close()
        self._cursor.close()

    def _abandon(self) -> None:
        """The unit raised: drop its session (rolling back its savepoint, if any)."""
        if self._session is not None:
            with contextlib.suppress(Exception):
                self._session.close()
        self._cursor.close()


Unit = Callable[[WriteTx], T]
# Refuses (raises) a write of conversation `key`'s state this Mind may no longer make.
Fence = Callable[[WriteTx, str], None]


def table_of(model: type[Base]) -> Table:
    """The table a model class is mapped to (every model of the store maps one table)."""
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to a table")
    return table


_INSERTS: dict[tuple[str, tuple[str, ...]], tuple[Insert, tuple[str, ...]]] = {}


def _insert_statement(table: Table, keys: tuple[str, ...]) -> tuple[Insert, tuple[str, ...]]:
    """The insert of `keys` into `table`, returning the primary key columns the row lacks
    (their keys come second)."""
    found = _INSERTS.get((table.name, keys))
    if found is None:
        missing = [column for column in table.primary_key.columns if column.key not in keys]
        statement = table.insert().returning(*missing) if missing else table.insert()
        found = _INSERTS[(table.name, keys)] = (statement, tuple(c.key for c in missing))
    return found
