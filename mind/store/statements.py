"""Hot statements: written by SQLAlchemy once per dialect, run on the driver's own cursor.

Why: SQLAlchemy's execution layer costs about 100 µs of CPU per statement (cache key,
execution context, result set-up) where the driver's cursor costs about 15 µs, and the writer
runs a few dozen statements per turn on the store's only write connection. Measured on the
three units of a Hand task round trip (create, accepted, result; seven statements and three
savepoints): 0.66 ms of CPU through SQLAlchemy Core, 0.13 ms through the driver.

SQLAlchemy still writes the SQL from the same Core constructs (so both backends keep one
definition) and values go through the column types' own bind and result processors, so a row
written here reads back the same through the ORM. Only plain statements qualify: no
"expanding" IN lists, no server-side defaults the caller must see.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Table
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Delete, Insert, Select, Update

Processor = Callable[[Any], Any] | None
Statement = Select[Any] | Insert | Update | Delete


@dataclass(frozen=True)
class Prepared:
    """One statement compiled for one dialect."""

    sql: str
    positional: bool
    # (parameter name, bind processor, value used when the caller gives none) in SQL order.
    parameters: tuple[tuple[str, Processor, Callable[[], Any] | None], ...]
    results: tuple[Processor, ...]
    row_type: type[tuple[Any, ...]]  # a named tuple of the returned columns, by column key

    def bind(self, values: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        """The driver's parameters for `values` (missing ones take their defaults)."""
        bound = [
            _process(processor, values[name] if name in values else _fallback(name, default))
            for name, processor, default in self.parameters
        ]
        if self.positional:
            return bound
        return {name: value for (name, _, _), value in zip(self.parameters, bound, strict=True)}

    def row(self, raw: Sequence[Any]) -> Any:
        return self.row_type(
            *(
                value if processor is None or value is None else processor(value)
                for processor, value in zip(self.results, raw, strict=True)
            )
        )


def _process(processor: Processor, value: Any) -> Any:
    return value if processor is None or value is None else processor(value)


def _fallback(name: str, default: Callable[[], Any] | None) -> Any:
    if default is None:
        raise KeyError(f"no value for the statement's parameter {name!r}")
    return default()


def prepare(statement: Statement, dialect: Dialect, *, column_keys: Sequence[str] = ()) -> Prepared:
    """Compile `statement` for `dialect` (an insert for exactly `column_keys`, plus the columns
    that have Python-side defaults, which are filled in here as SQLAlchemy would)."""
    compiled = statement.compile(dialect=dialect, column_keys=list(column_keys) or None)
    table = statement.table if isinstance(statement, Insert) else None
    names_to_binds = {name: bind for bind, name in compiled.bind_names.items()}
    order = compiled.positiontup if compiled.positional else list(names_to_binds)
    parameters = []
    for name in order or ():
        bind = names_to_binds[name]
        if bind.expanding:
            raise ValueError(f"{name!r} is a list parameter (IN); a prepared statement takes none")
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        parameters.append((name, processor, _default(bind, name, table)))
    returned = list(statement.exported_columns)  # selected or RETURNING columns
    results = tuple(
        column.type.dialect_impl(dialect).result_processor(dialect, None) for column in returned
    )
    row_type = namedtuple("Row", [column.key for column in returned], rename=True)  # type: ignore[misc]
    return Prepared(
        compiled.string, bool(compiled.positional), tuple(parameters), results, row_type
    )


def _default(bind: Any, name: str, table: Any) -> Callable[[], Any] | None:
    if not bind.required and bind.value is not None:
        value = bind.effective_value
        return lambda: value
    if isinstance(table, Table) and name in table.c:
        return _column_default(table.c[name])
    return None


def _column_default(column: Column[Any]) -> Callable[[], Any] | None:
    default = column.default
    if default is None or not (default.is_scalar or default.is_callable):
        return None
    if default.is_scalar:
        value = default.arg  # type: ignore[attr-defined]
        return lambda: value
    # SQLAlchemy wraps a column default callable to take an execution context it may ignore.
    function = default.arg  # type: ignore[attr-defined]
    return lambda: function(None)


_CACHE: dict[tuple[int, str, tuple[str, ...]], tuple[Statement, Prepared]] = {}


def prepared(
    statement: Statement, dialect: Dialect, *, column_keys: Sequence[str] = ()
) -> Prepared:
    """`prepare`, once per statement object and dialect: hot statements are module constants
    whose parameters are `bindparam`s."""
    key = (id(statement), dialect.name, tuple(column_keys))
    cached = _CACHE.get(key)
    if cached is None or cached[0] is not statement:
        cached = (statement, prepare(statement, dialect, column_keys=column_keys))
        _CACHE[key] = cached
    return cached[1]


def fetch(
    cursor: Any, statement: Statement, dialect: Dialect, values: Mapping[str, Any]
) -> list[Any]:
    """Run a select on a driver cursor; its rows as named tuples."""
    prepared_statement = prepared(statement, dialect)
    cursor.execute(prepared_statement.sql, prepared_statement.bind(values))
    return [prepared_statement.row(raw) for raw in cursor.fetchall()]
