"""Domain errors of the conversation layer; the servicer maps each to one gRPC status.

ConversationError
├── InvalidInput         INVALID_ARGUMENT   the request is malformed; nothing was written
├── NotFound             NOT_FOUND          unknown, or not visible to the principal
├── AlreadyExists        ALREADY_EXISTS     the conversation key is taken
├── NotAllowed           PERMISSION_DENIED  the caller lacks a scope
├── WrongState           FAILED_PRECONDITION e.g. no active run to cancel, nothing to compact
├── CompactionFailed     UNAVAILABLE        the summarising provider call failed; nothing changed
└── ShuttingDown         UNAVAILABLE        the Mind is stopping; retry elsewhere/later
"""

from __future__ import annotations


class ConversationError(Exception):
    """Base of the conversation layer's refusals."""


class InvalidInput(ConversationError):
    pass


class NotFound(ConversationError):
    pass


class AlreadyExists(ConversationError):
    pass


class NotAllowed(ConversationError):
    pass


class WrongState(ConversationError):
    pass


class ShuttingDown(ConversationError):
    pass


class CompactionFailed(ConversationError):
    pass
