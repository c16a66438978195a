"""The one error type of the calendar adapter: its message is meant for the owner or agent."""

from __future__ import annotations


class CalendarError(Exception):
    """The server failed or refused, or a request named what does not exist.

    Raised from `start` or the watch loop it fails the adapter (the engine restarts it); raised
    from an action it becomes that action's error.
    """
