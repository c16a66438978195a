"""A `delegate` call's child view relayed between Minds: it comes back whole when it fits one
notification, and with its oldest calls left out (the newest kept) when it would not."""

from __future__ import annotations

from mind.events.bus import EphemeralEvent
from mind.events.child_views import ChildCallView, ChildView
from mind.events.relay import decode, encode
from mind.events.views import ToolStatus

NOTIFY_LIMIT = 8000


def _view(calls: int, summary: str) -> ChildView:
    return ChildView(
        tool_call_id="call_1",
        conversation_key="p_sub_1",
        calls=tuple(
            ChildCallView(f"c{n}", "laptop__mark", ToolStatus.SUCCEEDED, summary, summary)
            for n in range(calls)
        ),
        calls_total=calls,
        latest_text="done",
    )


def _relayed(view: ChildView) -> ChildView | None:
    event = EphemeralEvent("tool_progress", "p_parent", ("alice",), "run_1", child=view)
    (payload,) = encode("node", 1, 7, event)
    assert len(payload.encode()) <= NOTIFY_LIMIT
    return decode(payload)[2].child


def test_a_child_view_that_fits_comes_back_whole() -> None:
    view = _view(3, "label=a")
    assert _relayed(view) == view


def test_a_child_view_too_large_for_a_notification_keeps_its_newest_calls() -> None:
    view = _view(8, "ü" * 160)
    relayed = _relayed(view)
    assert relayed is not None and 0 < len(relayed.calls) < 8
    assert relayed.calls == view.calls[-len(relayed.calls) :]
    assert (relayed.calls_total, relayed.latest_text) == (8, "done")
