"""The Mind's refusals: one base, one kind per way a client is told no.

    MindError
    ├── InvalidInput      the request itself is wrong (a bad field, value or reference)
    ├── NotFound          unknown, or not visible to the caller
    ├── AlreadyExists     the name or key is taken
    ├── WrongState        the request is fine, the current state forbids it
    ├── Unavailable       the Mind cannot do it now (stopping, a provider failed); retry later
    ├── NotAllowed        the caller is known but lacks the right
    └── Unauthenticated   the caller's credential is not (or no longer) usable

Every package raises one of these kinds, or a subclass of one that carries its own data or
fixed message; a class's gRPC status comes from its kind (`mind.status_codes`), never from a
table of its own. A refusal changes nothing, and its message is written for the client: it
says what to do about it and never holds a secret.

Errors that never reach a client (a provider that went silent, a lost compare-and-set) are
plain exceptions where they are raised: they are the Mind's own business, not a refusal.
"""

from __future__ import annotations


class MindError(Exception):
    """Base of every refusal a Mind service can send its client."""


class InvalidInput(MindError):
    """The request is malformed or names something it may not; nothing was written."""


class NotFound(MindError):
    """No such thing, or not one the caller may see (the two are not told apart)."""


class AlreadyExists(MindError):
    """The name or key is already taken."""


class WrongState(MindError):
    """The request is valid, but the state of what it names forbids it now."""


class Unavailable(MindError):
    """The Mind cannot serve the request now; the same request may succeed later."""


class NotAllowed(MindError):
    """The caller is authenticated but lacks the scope or grant the request needs."""


class Unauthenticated(MindError):
    """The credential presented is invalid, revoked or expired."""
