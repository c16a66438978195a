"""Errors of the Mind's link to Awareness, raised by its client (`mind.awareness.client`).

    AwarenessLinkError      Awareness did not answer a call, or ended it with an error status
    └── JournalReset        Awareness no longer has the observations after the Mind's cursor

The client translates the link's failures into these, so the tools and the router never see
gRPC. They are not `mind.errors` refusals: no Mind servicer lets them through (the tools and
reports turn them into text, the router resubscribes or retries).
"""

from __future__ import annotations


class AwarenessLinkError(Exception):
    """`status` names the gRPC status the call ended with; `details` is Awareness's message."""

    def __init__(self, status: str, details: str | None) -> None:
        super().__init__(f"{status}: {details}")
        self.status = status
        self.details = details


class JournalReset(AwarenessLinkError):
    """The cursor is ahead of Awareness's journal (it was reset): resubscribe from the start."""
