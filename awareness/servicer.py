"""gRPC edge of Awareness: converts proto <-> domain and maps refusals to status codes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc

from awareness import calls
from awareness.engine import Engine
from awareness.errors import (
    CursorAhead,
    InvalidRequest,
    MalformedMediaRef,
    MediaTooLarge,
    PushClosed,
    UnknownMediaRef,
)
from awareness.model import (
    Actor,
    CallResult,
    Effect,
    MediaRef,
    Observation,
    PublishedBatch,
    Trust,
)
from awareness.registry import RegisteredAdapter
from tobe.runtime.status import StatusTable, status_codes
from tobe.runtime.timestamps import to_timestamp
from tobe.v1 import awareness_pb2 as pb
from tobe.v1 import awareness_pb2_grpc as pb_grpc
from tobe.v1 import common_pb2

TRUST_TO_PROTO = {
    Trust.OFF: pb.TRUST_OFF,
    Trust.LOW: pb.TRUST_LOW,
    Trust.MEDIUM: pb.TRUST_MEDIUM,
    Trust.HIGH: pb.TRUST_HIGH,
    Trust.MAX: pb.TRUST_MAX,
}
EFFECT_TO_PROTO = {
    Effect.READ_ONLY: common_pb2.EFFECT_CLASS_READ_ONLY,
    Effect.WORKSPACE_WRITE: common_pb2.EFFECT_CLASS_WORKSPACE_WRITE,
    Effect.EXTERNAL_SIDE_EFFECT: common_pb2.EFFECT_CLASS_EXTERNAL_SIDE_EFFECT,
    Effect.UNKNOWN: common_pb2.EFFECT_CLASS_UNSPECIFIED,
}
ACTOR_TO_PROTO = {
    Actor.USER: pb.OBSERVATION_ACTOR_USER,
    Actor.ASSISTANT: pb.OBSERVATION_ACTOR_ASSISTANT,
    Actor.SERVICE: pb.OBSERVATION_ACTOR_SERVICE,
    Actor.SIGNAL: pb.OBSERVATION_ACTOR_SIGNAL,
    Actor.ADAPTER: pb.OBSERVATION_ACTOR_ADAPTER,
    Actor.SYSTEM: pb.OBSERVATION_ACTOR_SYSTEM,
}
AWARENESS_STATUS_CODES: StatusTable = {
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    PushClosed: grpc.StatusCode.UNAVAILABLE,
    CursorAhead: grpc.StatusCode.OUT_OF_RANGE,
    MalformedMediaRef: grpc.StatusCode.INVALID_ARGUMENT,
    UnknownMediaRef: grpc.StatusCode.NOT_FOUND,
    MediaTooLarge: grpc.StatusCode.FAILED_PRECONDITION,
}


def result_to_proto(result: CallResult) -> pb.ToolCallResult:
    return pb.ToolCallResult(
        call_id=result.call_id,
        adapter_id=result.adapter_id,
        action=result.action,
        timestamp=to_timestamp(result.timestamp),
        content_json=json.dumps(result.content),
    )


def media_to_proto(ref: MediaRef) -> pb.MediaRef:
    return pb.MediaRef(
        ref=ref.ref,
        mime_type=ref.mime_type,
        size_bytes=ref.size_bytes,
        width=ref.width,
        height=ref.height,
        filename=ref.filename,
    )


def observation_to_proto(observation: Observation) -> pb.Observation:
    return pb.Observation(
        id=observation.id,
        adapter_id=observation.adapter_id,
        adapter_name=observation.adapter_name,
        actor=ACTOR_TO_PROTO[observation.actor],
        trust=TRUST_TO_PROTO[observation.trust],
        timestamp=to_timestamp(observation.timestamp),
        content_json=json.dumps(observation.content),
        media=[media_to_proto(m) for m in observation.media],
        permissions=pb.Permissions(**observation.permissions.as_dict()),
        conversation_key=observation.conversation_key,
        instance=observation.instance,
        source_key=observation.source_key,
        source_title=observation.source_title,
    )


def batch_to_proto(
    batch: PublishedBatch, trace: dict[str, str] | None = None
) -> pb.SubscribeObservationsResponse:
    return pb.SubscribeObservationsResponse(
        publish_seq=batch.publish_seq,
        observations=[observation_to_proto(o) for o in batch.observations],
        trace_context=trace or {},
    )


def adapter_to_proto(record: RegisteredAdapter) -> pb.AdapterInfo:
    described = record.describe()

    def actions(key: str) -> list[pb.ActionSpec]:
        return [
            pb.ActionSpec(
                name=a["name"],
                description=a["description"],
                args_json_schema=json.dumps(a["args_schema"]),
                effect=EFFECT_TO_PROTO[Effect(a["effect"])],
            )
            for a in described[key]
        ]

    return pb.AdapterInfo(
        adapter_id=record.adapter_id,
        name=record.name,
        description=described["description"],
        auto_start=record.auto_start,
        running=record.running,
        read_actions=actions("read_actions"),
        write_actions=actions("write_actions"),
        config_schema_json=json.dumps(record.schema),
        config_json=json.dumps(described["config"]),
        last_error=record.last_error,
        state=record.state.value,
        restarts=record.restarts,
        next_restart_at=to_timestamp(record.next_restart_at) if record.next_restart_at else None,
        state_since=to_timestamp(record.state_since),
        instance=record.instance_name,
    )


def _args(args_json: str) -> dict[str, Any]:
    if not args_json:
        return {}
    try:
        args = json.loads(args_json)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"args_json is not valid JSON: {exc.msg}") from None
    if not isinstance(args, dict):
        raise InvalidRequest("args_json must be a JSON object")
    return args


def _required(value: str, message: str) -> None:
    if not value:
        raise InvalidRequest(message)


@status_codes(AWARENESS_STATUS_CODES)
class AwarenessServicer(pb_grpc.AwarenessServicer):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def ListAdapters(
        self,
        request: pb.ListAdaptersRequest,
        context: grpc.aio.ServicerContext[pb.ListAdaptersRequest, pb.ListAdaptersResponse],
    ) -> pb.ListAdaptersResponse:
        return pb.ListAdaptersResponse(
            adapters=[adapter_to_proto(a) for a in self.engine.adapters()]
        )

    async def Observe(
        self,
        request: pb.ObserveRequest,
        context: grpc.aio.ServicerContext[pb.ObserveRequest, pb.ObserveResponse],
    ) -> pb.ObserveResponse:
        _required(request.action, "action is required")
        args = _args(request.args_json)
        result = await calls.observe(
            self.engine, request.call_id, request.adapter_id, request.action, args
        )
        return pb.ObserveResponse(result=result_to_proto(result))

    async def Interact(
        self,
        request: pb.InteractRequest,
        context: grpc.aio.ServicerContext[pb.InteractRequest, pb.InteractResponse],
    ) -> pb.InteractResponse:
        _required(
            request.adapter_id, "adapter_id is required: interact runs an adapter's write action"
        )
        _required(request.action, "action is required")
        args = _args(request.args_json)
        result = await calls.interact(
            self.engine, request.call_id, request.adapter_id, request.action, args
        )
        return pb.InteractResponse(result=result_to_proto(result))

    async def RegisterAdapter(
        self,
        request: pb.RegisterAdapterRequest,
        context: grpc.aio.ServicerContext[pb.RegisterAdapterRequest, pb.RegisterAdapterResponse],
    ) -> pb.RegisterAdapterResponse:
        result = await calls.register(self.engine, request.call_id, request.name)
        return pb.RegisterAdapterResponse(result=result_to_proto(result))

    async def UnregisterAdapter(
        self,
        request: pb.UnregisterAdapterRequest,
        context: grpc.aio.ServicerContext[
            pb.UnregisterAdapterRequest, pb.UnregisterAdapterResponse
        ],
    ) -> pb.UnregisterAdapterResponse:
        _required(request.adapter_id, "adapter_id is required")
        result = await calls.unregister(self.engine, request.call_id, request.adapter_id)
        return pb.UnregisterAdapterResponse(result=result_to_proto(result))

    async def SubscribeObservations(
        self,
        request: pb.SubscribeObservationsRequest,
        context: grpc.aio.ServicerContext[
            pb.SubscribeObservationsRequest, pb.SubscribeObservationsResponse
        ],
    ) -> AsyncIterator[pb.SubscribeObservationsResponse]:
        if request.after_seq < 0:
            raise InvalidRequest("after_seq must be >= 0")
        async for batch in self.engine.subscribe(request.after_seq):
            yield batch_to_proto(batch, self.engine.publisher.trace_of(batch.publish_seq))

    async def GetMedia(
        self,
        request: pb.GetMediaRequest,
        context: grpc.aio.ServicerContext[pb.GetMediaRequest, pb.GetMediaResponse],
    ) -> pb.GetMediaResponse:
        if request.max_bytes < 1:
            raise InvalidRequest("max_bytes must be >= 1")
        # A file read: off the event loop, which keeps serving the push stream meanwhile.
        mime_type, data = await asyncio.to_thread(
            self.engine.media.read, request.ref, request.max_bytes
        )
        return pb.GetMediaResponse(mime_type=mime_type, data=data)
