"""The operator's widget types: each change one unit of the store's writer with its audit row."""

from __future__ import annotations

from collections.abc import Callable

from mind.management import audit
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.widgets.types import (
    PutResult,
    WidgetTypeView,
    current_type,
    delete_type,
    list_types,
    put_type,
)


class WidgetTypeCommands:
    """`tobe admin widget-types …` against the store; `changed` hears of every committed put
    and delete (the running Mind's widget tools)."""

    def __init__(self, database: Database, changed: Callable[[], None] | None = None) -> None:
        self._database = database
        self._changed = changed or (lambda: None)

    async def put(
        self, name: str, schema_text: str, page: bytes, *, force: bool, actor: str
    ) -> PutResult:
        def unit(tx: WriteTx) -> PutResult:
            result = put_type(tx, name, schema_text, page, force=force)
            audit.record(
                tx.session,
                action="widget_type.put",
                actor=actor,
                target=name,
                details={
                    "version": result.widget_type.version,
                    "modules": list(result.widget_type.modules),
                    "removed_modules": list(result.removed_modules),
                },
            )
            return result

        result = await self._database.write(unit)
        self._changed()
        return result

    async def list(self) -> list[WidgetTypeView]:
        return await self._database.read(list_types)

    async def get(self, name: str) -> WidgetTypeView:
        return await self._database.read(lambda session: current_type(session, name))

    async def delete(self, name: str, *, force: bool, actor: str) -> int:
        def unit(tx: WriteTx) -> int:
            removed = delete_type(tx, name, force=force)
            audit.record(
                tx.session,
                action="widget_type.delete",
                actor=actor,
                target=name,
                details={"widgets_removed": removed},
            )
            return removed

        removed = await self._database.write(unit)
        self._changed()
        return removed
