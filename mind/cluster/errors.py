"""What a Mind is told when a conversation is not its own to change."""

from __future__ import annotations

from mind.errors import Unavailable


class OwnedElsewhere(Unavailable):
    """Another live Mind owns the conversation: the request belongs there (`address`)."""

    def __init__(self, key: str, node_id: str, address: str) -> None:
        super().__init__(
            f"conversation {key!r} is served by the Mind {node_id!r} at {address or '?'}; "
            "retry there, or retry here once it is gone"
        )
        self.key = key
        self.node_id = node_id
        self.address = address


# Why a run stops on a Mind that lost the conversation's lease.
LOST_HOLD = "interrupted: this Mind lost its hold on the conversation"


class LeaseLost(Unavailable):
    """This Mind no longer holds the conversation's lease (it ran out, or another Mind took
    it): nothing was written, and the request may be retried."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"this Mind no longer serves conversation {key!r} (its lease ran out); "
            "nothing was written: retry"
        )
        self.key = key
