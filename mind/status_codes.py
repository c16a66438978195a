"""The one table from a refusal's kind to its gRPC status code, for every Mind servicer.

The Mind service, the Management service and HandLink decorate their servicers with it
(`tobe.runtime.status.status_codes`), so the same refusal ends with the same code wherever it
is raised. It lives apart from `mind.errors` because only gRPC edges import `grpc`: domain
code raises the kinds without knowing how they travel.
"""

from __future__ import annotations

from types import MappingProxyType

from grpc import StatusCode

from mind import errors
from tobe.runtime.status import StatusTable

STATUS_CODES: StatusTable = MappingProxyType(
    {
        errors.InvalidInput: StatusCode.INVALID_ARGUMENT,
        errors.NotFound: StatusCode.NOT_FOUND,
        errors.AlreadyExists: StatusCode.ALREADY_EXISTS,
        errors.WrongState: StatusCode.FAILED_PRECONDITION,
        errors.Unavailable: StatusCode.UNAVAILABLE,
        errors.NotAllowed: StatusCode.PERMISSION_DENIED,
        errors.Unauthenticated: StatusCode.UNAUTHENTICATED,
    }
)
