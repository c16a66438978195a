"""The widgets API group: a widget with its records and its type's page, for the people who
may read its conversation (a client opens a widget message's card)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from mind.conversation import queries
from mind.conversation.access import Viewer, check_principal
from mind.errors import InvalidInput
from mind.store.database import Database
from mind.widgets.types import WidgetTypeView, current_type
from mind.widgets.widgets import RECORD_ID, WidgetView, read_widget


@dataclass(frozen=True)
class OpenedWidget:
    """A widget and the current version of its type (its modules, in order, and page)."""

    widget: WidgetView
    widget_type: WidgetTypeView


class ConversationWidgets:
    def __init__(self, database: Database) -> None:
        self._database = database

    async def open(self, viewer: Viewer, key: str, widget_id: str) -> OpenedWidget:
        """NotFound when the viewer cannot see the conversation or it has no such widget (the
        two are not told apart)."""
        check_principal(viewer.principal)
        if not RECORD_ID.fullmatch(widget_id):
            raise InvalidInput(f"widget id {widget_id[:80]!r} is not valid (a WidgetCard.id)")

        def read(session: Session) -> OpenedWidget:
            queries.visible(session, viewer, key)
            widget = read_widget(session, key, widget_id)
            return OpenedWidget(widget, current_type(session, widget.type_name))

        return await self._database.read(read)
