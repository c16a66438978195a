"""Errors of the approval path.

ApprovalError
├── ApprovalNotFound        unknown id, or a conversation the principal cannot see
├── ApprovalAlreadyDecided  a decision already committed (the first one wins)
├── InvalidDecision         a decision a person may not give (expired), or a bad reason
└── ArgumentsNotBindable    arguments no digest can cover (no RFC 8785 form); the call is refused
"""

from __future__ import annotations


class ApprovalError(Exception):
    """Base of every approval error."""


class ApprovalNotFound(ApprovalError):
    def __init__(self, approval_id: str) -> None:
        super().__init__(f"approval {approval_id!r} not found")
        self.approval_id = approval_id


class ApprovalAlreadyDecided(ApprovalError):
    def __init__(self, approval_id: str, decision: str) -> None:
        super().__init__(f"approval {approval_id!r} was already decided: {decision}")
        self.approval_id = approval_id
        self.decision = decision


class InvalidDecision(ApprovalError):
    """The decision is not one a person can give."""


class ArgumentsNotBindable(ApprovalError):
    """A call that needs a digest holds a value RFC 8785 cannot write (`NotCanonicalizable`)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"the arguments cannot be bound to an approval: {problem}")
        self.path = path
