"""Which widgets a conversation holds, as the lines the model reads in its context.

The model learns of a widget it made from the tool's result, but a later run (or one after a
compaction, or a widget made by profile code) has nothing telling it the widget is there; the
run's last note lists them, with their records counted per module, so the model reads or
writes one it knows of instead of making a second.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mind.store.models import Widget, WidgetRecord

HEADING = "Widgets in this conversation"
# Widgets listed by name; the rest are counted (the newest are listed).
LISTED = 20
_TITLE_CHARS = 80


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _TITLE_CHARS else text[: _TITLE_CHARS - 1] + "…"


def widgets_note(session: Session, conversation_key: str) -> str:
    """The lines naming the conversation's widgets, newest last ("" when it has none)."""
    total = session.scalar(
        select(func.count()).select_from(Widget).where(Widget.conversation_key == conversation_key)
    )
    if not total:
        return ""
    rows = session.execute(
        select(Widget.id, Widget.type_name, Widget.title, Widget.revision)
        .where(Widget.conversation_key == conversation_key)
        .order_by(Widget.created_at.desc(), Widget.id.desc())
        .limit(LISTED)
    ).all()
    ids = [row.id for row in rows]
    counts: dict[str, list[str]] = {widget_id: [] for widget_id in ids}
    for widget_id, module, records in session.execute(
        select(WidgetRecord.widget_id, WidgetRecord.module, func.count())
        .where(WidgetRecord.widget_id.in_(ids))
        .group_by(WidgetRecord.widget_id, WidgetRecord.module)
        .order_by(WidgetRecord.widget_id, WidgetRecord.module)
    ):
        counts[widget_id].append(f"{module} {records}")
    lines = [f"{HEADING} ({total}; read one before changing it):"]
    if total > len(rows):
        lines.append(f"- and {total - len(rows)} older ones")
    for row in reversed(rows):
        listed = ", ".join(counts[row.id]) or "no records"
        lines.append(
            f"- {row.id}: {row.type_name} {_cut(row.title)!r}, revision {row.revision} ({listed})"
        )
    return "\n".join(lines)
