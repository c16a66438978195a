"""Server reflection on every ToBe server: `grpc.reflection.v1` beside `v1alpha`.

grpcio-reflection (1.85, the newest) implements only `grpc.reflection.v1alpha`; current
clients (grpcurl, grpcui, Postman) ask for `v1` first. The two protocols' messages are
identical on the wire (same fields, numbers and types; only the proto package differs), so
the v1 service re-encodes each request as v1alpha, lets grpcio-reflection answer it, and
re-encodes the answer as v1: one implementation behind both names. The v1 messages are
generated from proto/grpc/reflection/v1 into `tobe.grpc_reflection_v1`; registering them
also puts the v1 service's own descriptor in the pool, so reflection describes itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any, cast

import grpc
from grpc_reflection.v1alpha import reflection as v1alpha
from grpc_reflection.v1alpha import reflection_pb2 as v1alpha_pb2

from tobe.grpc_reflection_v1 import reflection_pb2 as v1_pb2

SERVICE_NAME = v1_pb2.DESCRIPTOR.services_by_name["ServerReflection"].full_name
V1ALPHA_SERVICE_NAME = v1alpha.SERVICE_NAME


class ReflectionV1Servicer:
    """`grpc.reflection.v1.ServerReflection`, answered by grpcio-reflection's v1alpha logic."""

    def __init__(self, service_names: Iterable[str]) -> None:
        self._v1alpha = v1alpha.aio.ReflectionServicer(service_names)

    async def ServerReflectionInfo(
        self,
        requests: AsyncIterable[v1_pb2.ServerReflectionRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[v1_pb2.ServerReflectionResponse]:
        # The stubs declare this async generator as a coroutine returning an iterable.
        answers = cast(
            AsyncIterator[v1alpha_pb2.ServerReflectionResponse],
            self._v1alpha.ServerReflectionInfo(_as_v1alpha(requests), context),
        )
        async for answer in answers:
            yield v1_pb2.ServerReflectionResponse.FromString(answer.SerializeToString())


async def _as_v1alpha(
    requests: AsyncIterable[v1_pb2.ServerReflectionRequest],
) -> AsyncIterator[v1alpha_pb2.ServerReflectionRequest]:
    async for request in requests:
        yield v1alpha_pb2.ServerReflectionRequest.FromString(request.SerializeToString())


def enable_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection v1 and v1alpha on `server`; both list `service_names` and themselves."""
    names = [*service_names, SERVICE_NAME, V1ALPHA_SERVICE_NAME]
    v1alpha.enable_server_reflection(names, server)
    servicer = ReflectionV1Servicer(names)
    handler = grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
                servicer.ServerReflectionInfo,
                request_deserializer=v1_pb2.ServerReflectionRequest.FromString,
                response_serializer=v1_pb2.ServerReflectionResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))
