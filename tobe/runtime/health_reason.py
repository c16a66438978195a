"""Why a service is not serving, carried beside the standard gRPC health answer.

`grpc.health.v1` has no field for a reason, so the reason travels as trailing metadata of the
same `Health.Check` call (`REASON_KEY`, UTF-8): any health client still reads the status
alone, and `tobe health` (`tobe.runtime.health.check_reason`) prints both from one call.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from grpc_health.v1 import health, health_pb2

# A `-bin` key: gRPC carries its value as bytes, so a reason may hold any text.
REASON_KEY = "tobe-health-reason-bin"


class ReasonedHealth(health.aio.HealthServicer):
    """The standard health servicer, answering each Check with the current reason (if any)."""

    def __init__(self) -> None:
        super().__init__()
        self.reason = ""

    async def Check(
        self,
        request: health_pb2.HealthCheckRequest,
        context: grpc.aio.ServicerContext[
            health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse
        ],
    ) -> health_pb2.HealthCheckResponse:
        if self.reason:
            context.set_trailing_metadata(((REASON_KEY, self.reason.encode()),))
        answer: health_pb2.HealthCheckResponse = await super().Check(request, context)
        return answer


def reason_of(trailing: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The reason a health answer's trailing metadata (aio or blocking) carries; "" when none."""
    for key, value in trailing or ():
        if key == REASON_KEY:
            return value.decode(errors="replace") if isinstance(value, bytes) else value
    return ""
