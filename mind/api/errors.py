"""What the Mind service tells gateways when it refuses: domain error type → gRPC status code.

The table is applied to every method of `MindServicer` (`tobe.runtime.status`). Only the
servicer itself raises `ClientUnauthenticated`; everything else comes from the domain (a
sign-out's unusable token is the credentials kernel's `TokenNotAccepted`).
"""

from __future__ import annotations

from grpc import StatusCode

from mind.approvals import errors as approvals
from mind.conversation import errors as conversations
from mind.credentials import InvalidCredentialRequest, PairingCodeNotFound, TokenNotAccepted
from mind.events.subscription import InvalidCursor, SnapshotRequired
from mind.memory.rules import MemoryRefused
from mind.profiles.errors import ProfileError
from mind.scheduler import errors as scheduler
from tobe.runtime.status import StatusTable


class ClientUnauthenticated(Exception):
    """The client token a gateway asked about is invalid, revoked or expired."""


MIND_STATUS_CODES: StatusTable = {
    conversations.InvalidInput: StatusCode.INVALID_ARGUMENT,
    conversations.NotFound: StatusCode.NOT_FOUND,
    conversations.AlreadyExists: StatusCode.ALREADY_EXISTS,
    conversations.NotAllowed: StatusCode.PERMISSION_DENIED,
    conversations.WrongState: StatusCode.FAILED_PRECONDITION,
    conversations.ShuttingDown: StatusCode.UNAVAILABLE,
    conversations.CompactionFailed: StatusCode.UNAVAILABLE,
    MemoryRefused: StatusCode.INVALID_ARGUMENT,
    SnapshotRequired: StatusCode.FAILED_PRECONDITION,
    InvalidCursor: StatusCode.INVALID_ARGUMENT,
    approvals.ApprovalNotFound: StatusCode.NOT_FOUND,
    approvals.ApprovalAlreadyDecided: StatusCode.FAILED_PRECONDITION,
    approvals.InvalidDecision: StatusCode.INVALID_ARGUMENT,
    scheduler.InvalidTrigger: StatusCode.INVALID_ARGUMENT,
    scheduler.InvalidChange: StatusCode.INVALID_ARGUMENT,
    scheduler.ScheduleNotFound: StatusCode.NOT_FOUND,
    scheduler.WrongScheduleState: StatusCode.FAILED_PRECONDITION,
    ClientUnauthenticated: StatusCode.UNAUTHENTICATED,
    # Pairing: a bad principal, ttl or code; a code unknown, used or expired; a sign-out with a
    # token that names no live client credential.
    InvalidCredentialRequest: StatusCode.INVALID_ARGUMENT,
    PairingCodeNotFound: StatusCode.NOT_FOUND,
    TokenNotAccepted: StatusCode.UNAUTHENTICATED,
    # The conversation's profile cannot run (a compaction needs it too).
    ProfileError: StatusCode.FAILED_PRECONDITION,
}
