"""Client side of the gRPC health protocol, for container health checks and supervisors."""

from __future__ import annotations

import asyncio

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tobe.runtime.channel import open_channel
from tobe.runtime.health_reason import reason_of
from tobe.runtime.tls import ClientTls


async def check(
    target: str, service: str = "", timeout: float = 3.0, *, tls: ClientTls | None = None
) -> str:
    """Return the serving status name of `service` at `target` ("SERVING", "NOT_SERVING", …).

    Raises grpc.aio.AioRpcError when the server cannot be reached in `timeout` seconds.
    """
    status, _ = await check_reason(target, service, timeout, tls=tls)
    return status


async def check_reason(
    target: str, service: str = "", timeout: float = 3.0, *, tls: ClientTls | None = None
) -> tuple[str, str]:
    """(status name, why not serving) of `service` at `target`; the reason is "" when the
    service gives none (`tobe.runtime.health_reason`). Raises like `check`."""
    async with open_channel(target, tls=tls) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        # The grpc_health stubs declare HealthStub without its methods.
        call = stub.Check(  # type: ignore[attr-defined]
            health_pb2.HealthCheckRequest(service=service), timeout=timeout
        )
        response: health_pb2.HealthCheckResponse = await call
        trailing = await call.trailing_metadata()
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status), reason_of(trailing)


async def wait_serving(target: str, service: str = "", deadline: float = 30.0) -> None:
    """Poll until `service` at `target` is SERVING; raise TimeoutError after `deadline` s."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    last = "unreachable"
    while loop.time() < end:
        try:
            last = await check(target, service, timeout=min(2.0, max(0.1, end - loop.time())))
            if last == "SERVING":
                return
        except grpc.aio.AioRpcError as exc:
            last = exc.code().name
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{target} not serving after {deadline:.0f}s (last status: {last})")
