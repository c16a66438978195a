"""Refusals of the Management service, mapped to gRPC status codes once, in the servicer.

    ManagementError
    ├── InvalidArgument      bad input (unknown kind or scope, empty principal, past expiry)
    ├── NotFound             no credential / conversation with that id or key
    └── FailedPrecondition   the state forbids it (already revoked, a run is running)

Every refusal changes nothing; its message says what to do about it.
"""

from __future__ import annotations


class ManagementError(Exception):
    """Base of every Management refusal."""


class InvalidArgument(ManagementError):
    pass


class NotFound(ManagementError):
    pass


class FailedPrecondition(ManagementError):
    pass
