"""The parent's card of one `delegate` call: its child run's view, published as the call's
tool progress while the call waits.

Each event carries the whole view (the child's latest calls and text, read from the store)
with a one-line note of what changed, so a Face that coalesces a call's progress keeps the
newest view, and a client that missed some still shows the child as it is. The same view is
read again by a snapshot (`mind.conversation.child_views`), which rebuilds the card after a
reload or a restart.
"""

from __future__ import annotations

from mind.conversation.child_views import child_view
from mind.events.bus import EphemeralEvent, EventBus
from mind.events.child_views import ChildView
from mind.store import models
from mind.store.database import Database
from mind.tools.base import DetailMode


class ChildCard:
    """Publishes the view of the child of `tool_call_id` on the parent conversation."""

    def __init__(
        self,
        database: Database,
        bus: EventBus,
        tool_call_id: str,
        parent_key: str,
        audience: list[str],
    ) -> None:
        self.database = database
        self.bus = bus
        self.tool_call_id = tool_call_id
        self.parent_key = parent_key
        self.audience = tuple(audience)
        self.run_id = ""
        # Notes may quote a child's tool progress: not for a call admitted in summary mode.
        self.notes_shown = False
        self.view: ChildView | None = None

    async def open(self) -> ChildCard:
        """Read the call's run and mode; the card is ready to show."""
        projection = await self.database.read(
            lambda s: s.get(models.ToolProjection, self.tool_call_id)
        )
        if projection is not None:
            self.run_id = projection.run_id
            self.notes_shown = projection.admitted_mode != DetailMode.SUMMARY.value
        return self

    async def show(self, note: str, *, refresh: bool = True) -> None:
        """Publish the view (read again from the store unless `refresh` is off) with `note`."""
        if refresh or self.view is None:
            self.view = await self.database.read(lambda s: child_view(s, self.tool_call_id))
        self.bus.publish(
            EphemeralEvent(
                kind="tool_progress",
                conversation_key=self.parent_key,
                audience=self.audience,
                run_id=self.run_id,
                tool_call_id=self.tool_call_id,
                text=note if self.notes_shown else "",
                child=self.view,
            )
        )
