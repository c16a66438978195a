"""Errors of the approval path; the refusals are `mind.errors` kinds.

ApprovalNotFound        NotFound      unknown id, or a conversation the principal cannot see
ApprovalAlreadyDecided  WrongState    a decision already committed (the first one wins)
InvalidDecision         InvalidInput  a decision a person may not give (expired), or a bad reason
ArgumentsNotBindable    (internal)    arguments no digest can cover (no RFC 8785 form)
"""

from __future__ import annotations

from mind.errors import InvalidInput, NotFound, WrongState


class ApprovalNotFound(NotFound):
    def __init__(self, approval_id: str) -> None:
        super().__init__(f"approval {approval_id!r} not found")
        self.approval_id = approval_id


class ApprovalAlreadyDecided(WrongState):
    def __init__(self, approval_id: str, decision: str) -> None:
        super().__init__(f"approval {approval_id!r} was already decided: {decision}")
        self.approval_id = approval_id
        self.decision = decision


class InvalidDecision(InvalidInput):
    """The decision is not one a person can give."""


class ArgumentsNotBindable(Exception):
    """A call that needs a digest holds a value RFC 8785 cannot write (`NotCanonicalizable`).

    Not a refusal to a client: the authorizer turns it into a denied tool call the model sees.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"the arguments cannot be bound to an approval: {problem}")
        self.path = path
