"""An OTLP receiver served in the test: the collector's gRPC TraceService and MetricsService
(from the opentelemetry-proto package's generated services), keeping what it is sent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field

import grpc
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1 import trace_pb2


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    span: trace_pb2.Span

    @property
    def trace_id(self) -> str:
        return self.span.trace_id.hex()

    @property
    def span_id(self) -> str:
        return self.span.span_id.hex()

    @property
    def parent_id(self) -> str:
        return self.span.parent_span_id.hex()

    @property
    def attributes(self) -> dict[str, object]:
        return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in self.span.attributes}


def _service(resource: object) -> str:
    for attribute in resource.attributes:  # type: ignore[attr-defined]
        if attribute.key == "service.name":
            return str(attribute.value.string_value)
    return ""


@dataclass
class Received:
    traces: list[trace_service_pb2.ExportTraceServiceRequest] = field(default_factory=list)
    metrics: list[metrics_service_pb2.ExportMetricsServiceRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> list[ReceivedSpan]:
        with self.lock:
            requests = list(self.traces)
        return [
            ReceivedSpan(_service(resource_spans.resource), span)
            for request in requests
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]

    def metric_names(self) -> dict[str, set[str]]:
        """Each service's metric names received so far."""
        with self.lock:
            requests = list(self.metrics)
        names: dict[str, set[str]] = {}
        for request in requests:
            for resource_metrics in request.resource_metrics:
                service = _service(resource_metrics.resource)
                for scope in resource_metrics.scope_metrics:
                    names.setdefault(service, set()).update(m.name for m in scope.metrics)
        return names


class _Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request, context):  # type: ignore[no-untyped-def]
        with self.received.lock:
            self.received.traces.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()


class _Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request, context):  # type: ignore[no-untyped-def]
        with self.received.lock:
            self.received.metrics.append(request)
        return metrics_service_pb2.ExportMetricsServiceResponse()


@dataclass
class Receiver:
    port: int
    received: Received

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def serving() -> Iterator[Receiver]:
    """A receiver on a free loopback port until the generator is closed (a fixture's body)."""
    received = Received()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Traces(received), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(_Metrics(received), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield Receiver(port, received)
    finally:
        server.stop(None)
