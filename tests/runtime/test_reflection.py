"""Server reflection answers `grpc.reflection.v1` (what grpcurl asks first) and still `v1alpha`.

A v1 client stub built from the v1 messages talks to a real Mind and a real Face.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor
from grpc_reflection.v1alpha import reflection_pb2 as v1alpha_pb2
from helpers.face_process import running_face
from helpers.mind_process import running_mind

from tobe.grpc_reflection_v1 import reflection_pb2 as v1_pb2

pytestmark = pytest.mark.e2e

VERSIONS = {"v1": v1_pb2, "v1alpha": v1alpha_pb2}
REFLECTION = {"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with running_mind(tmp_path_factory.mktemp("reflection"), script=None) as mind:
        with running_face(mind) as face:
            yield {"mind": mind.address, "face": face.address}


def reflect(address: str, version: str, *requests: Any) -> list[Any]:
    """Send `requests` on one ServerReflectionInfo stream of `version`; the answers in order."""
    messages: ModuleType = VERSIONS[version]
    with grpc.insecure_channel(address) as channel:
        info = channel.stream_stream(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=messages.ServerReflectionRequest.SerializeToString,
            response_deserializer=messages.ServerReflectionResponse.FromString,
        )
        return list(info(iter(requests), timeout=10))


def services(address: str, version: str) -> set[str]:
    messages: ModuleType = VERSIONS[version]
    [answer] = reflect(address, version, messages.ServerReflectionRequest(list_services=""))
    return {service.name for service in answer.list_services_response.service}


@pytest.mark.parametrize(
    ("server", "own"), [("mind", "tobe.v1.Mind"), ("face", "tobe.v1.FaceGateway")]
)
@pytest.mark.parametrize("version", ["v1", "v1alpha"])
def test_reflection_lists_the_services_of_the_mind_and_face_in_v1_and_v1alpha(
    servers: dict[str, str], server: str, own: str, version: str
) -> None:
    assert {own, "grpc.health.v1.Health", *REFLECTION} <= services(servers[server], version)


def test_reflection_v1_returns_a_service_file_descriptor_and_describes_itself(
    servers: dict[str, str],
) -> None:
    mind, reflection = reflect(
        servers["mind"],
        "v1",
        v1_pb2.ServerReflectionRequest(file_containing_symbol="tobe.v1.Mind"),
        v1_pb2.ServerReflectionRequest(
            file_containing_symbol="grpc.reflection.v1.ServerReflection"
        ),
    )
    files = {
        proto.name: proto
        for proto in map(
            descriptor_pb2.FileDescriptorProto.FromString,
            mind.file_descriptor_response.file_descriptor_proto,
        )
    }
    assert mind.original_request.file_containing_symbol == "tobe.v1.Mind"
    assert "Mind" in [service.name for service in files["tobe/v1/mind.proto"].service]
    # The transitive dependencies come along, so a client can build every message type.
    assert set(files["tobe/v1/mind.proto"].dependency) <= set(files)

    [own] = map(
        descriptor_pb2.FileDescriptorProto.FromString,
        reflection.file_descriptor_response.file_descriptor_proto,
    )
    assert (own.name, own.package) == ("grpc/reflection/v1/reflection.proto", "grpc.reflection.v1")


def test_reflection_v1_answers_an_unknown_symbol_with_not_found(servers: dict[str, str]) -> None:
    [answer] = reflect(
        servers["face"],
        "v1",
        v1_pb2.ServerReflectionRequest(file_containing_symbol="tobe.v1.NoSuchService"),
    )
    assert answer.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


def test_v1_messages_are_wire_identical_to_v1alpha() -> None:
    """What the v1 service's re-encoding relies on: every field keeps name, number and type."""
    v1 = v1_pb2.DESCRIPTOR.message_types_by_name
    alpha = v1alpha_pb2.DESCRIPTOR.message_types_by_name
    assert set(v1) == set(alpha)
    for name, message in v1.items():
        assert shape(message) == shape(alpha[name]), name


def shape(message: Descriptor) -> list[tuple[str, int, int, bool, str]]:
    return [
        (
            field.name,
            field.number,
            field.type,
            field.is_repeated,
            field.message_type.name if field.message_type else "",
        )
        for field in message.fields
    ]
