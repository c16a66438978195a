"""The email channel's network side: the agent's own mailbox (see `transport`)."""

from .transport import EmailTransport

__all__ = ["EmailTransport"]
