"""Every RPC of every service refuses an enum value its enum does not define: INVALID_ARGUMENT
naming the field, from the real server hosting the service (a real Mind with its HandLink and
Management, a real Face in front of it), never INTERNAL.

The cases are walked from the generated descriptors, not listed: every method of every
service in `tobe/v1/*_pb2.py`, and every enum field its request can hold (nested, repeated,
map and oneof fields included). Each request carries one undefined value, the enum's highest
number plus one; a stream carries it in its first frame.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import (
    Descriptor,
    EnumDescriptor,
    FieldDescriptor,
    MethodDescriptor,
    ServiceDescriptor,
)
from google.protobuf.message import Message
from helpers.face_process import FaceProcess, running_face
from helpers.mind_gateway import SCRIPT
from helpers.mind_process import MindProcess, issue_token, running_mind, store_url
from helpers.raw_calls import refusal, wait_for_lines

import tobe.v1
from mind.store.migrate import upgrade
from tobe.runtime.channel import bearer_metadata
from tobe.runtime.enum_values import has_enum_field
from tobe.v1 import face_pb2, hand_pb2

pytestmark = pytest.mark.e2e

# The key a walked path puts into a map it goes through.
MAP_KEY = {FieldDescriptor.TYPE_STRING: "k", FieldDescriptor.TYPE_BOOL: True}


def _contract_modules() -> list[ModuleType]:
    names = [m.name for m in pkgutil.iter_modules(tobe.v1.__path__) if m.name.endswith("_pb2")]
    return [importlib.import_module(f"tobe.v1.{name}") for name in sorted(names)]


def _services() -> list[ServiceDescriptor]:
    return [
        service
        for module in _contract_modules()
        for service in module.DESCRIPTOR.services_by_name.values()
    ]


def _enum_paths(
    descriptor: Descriptor, above: frozenset[Descriptor] = frozenset()
) -> Iterator[tuple[FieldDescriptor, ...]]:
    """Every chain of fields from `descriptor` down to an enum field; a message type already on
    the chain is not entered again."""
    above = above | {descriptor}
    for field in descriptor.fields:
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            value = entry.fields_by_name["value"]
            if value.enum_type is not None:
                yield (field,)
            elif value.message_type is not None and value.message_type not in above:
                for below in _enum_paths(value.message_type, above):
                    yield (field, *below)
        elif field.enum_type is not None:
            yield (field,)
        elif entry is not None and entry not in above:
            for below in _enum_paths(entry, above):
                yield (field, *below)


@dataclass(frozen=True)
class Case:
    service: ServiceDescriptor
    method: MethodDescriptor
    fields: tuple[FieldDescriptor, ...]

    @property
    def enum(self) -> EnumDescriptor:
        last = self.fields[-1]
        entry = last.message_type
        enum = entry.fields_by_name["value"].enum_type if entry is not None else last.enum_type
        assert enum is not None
        return enum

    @property
    def value(self) -> int:
        return max(self.enum.values_by_number) + 1

    @property
    def id(self) -> str:
        return f"{self.service.name}.{self.method.name}:{'.'.join(f.name for f in self.fields)}"

    def request(self, value: int) -> tuple[Message, str]:
        """The method's request with `value` at the end of `fields`, and that field's path."""
        request: Message = message_factory.GetMessageClass(self.method.input_type)()
        target: Any = request
        path: list[str] = []
        for index, field in enumerate(self.fields):
            last = index == len(self.fields) - 1
            container = getattr(target, field.name)
            entry = field.message_type
            if entry is not None and entry.GetOptions().map_entry:
                key = MAP_KEY.get(entry.fields_by_name["key"].type, 1)
                path.append(f"{field.name}[{key!r}]")
                if last:
                    container[key] = value
                else:
                    target = container[key]
            elif field.is_repeated:
                path.append(f"{field.name}[0]")
                if last:
                    container.append(value)
                else:
                    target = container.add()
            else:
                path.append(field.name)
                if last:
                    setattr(target, field.name, value)
                else:
                    container.SetInParent()
                    target = container
        return request, ".".join(path)


SERVICES = _services()
CASES = [
    Case(service, method, fields)
    for service in SERVICES
    for method in service.methods
    for fields in _enum_paths(method.input_type)
]
WITHOUT_ENUMS = [
    method
    for service in SERVICES
    for method in service.methods
    if not any(case.method is method for case in CASES)
]


@dataclass
class Servers:
    mind: MindProcess
    face: FaceProcess
    hand_token: str

    def target(self, service: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """Where `service` is served and the credential a call to it carries."""
        mind = self.mind
        targets = {
            "tobe.v1.Mind": (mind.address, mind.gateway_metadata),
            "tobe.v1.HandLink": (mind.address, bearer_metadata(self.hand_token)),
            "tobe.v1.Management": (f"unix:{mind.data_dir / 'mind.sock'}", ()),
            "tobe.v1.FaceGateway": (
                self.face.address,
                bearer_metadata(mind.client_tokens["alice"]),
            ),
        }
        if service not in targets:
            pytest.fail(f"{service} has a request with an enum but no server in this test")
        return targets[service]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    root = tmp_path_factory.mktemp("enums")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    data_dir = root / "data"
    data_dir.mkdir()
    upgrade(store_url(data_dir))
    hand_token = issue_token(store_url(data_dir), kind="hand", principal="laptop", scopes=[])
    with running_mind(root, script=script) as mind, running_face(mind, web=False) as face:
        yield Servers(mind, face, hand_token)


def test_the_walk_reaches_every_contract_and_finds_enums_where_they_are() -> None:
    """Guards the walk itself: it sees every service, and the fields that prompted this."""
    assert {s.full_name for s in SERVICES} >= {
        "tobe.v1.Mind",
        "tobe.v1.Management",
        "tobe.v1.HandLink",
        "tobe.v1.FaceGateway",
        "tobe.v1.Awareness",
    }
    found = {case.id for case in CASES}
    assert {"Mind.DecideApproval:decision", "Mind.DecideAction:decision"} <= found
    assert "HandLink.Attach:hello.held_tasks.state" in found


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_an_undefined_enum_value_is_invalid_argument_naming_the_field(
    servers: Servers, case: Case
) -> None:
    assert has_enum_field(case.method.input_type)
    target, metadata = servers.target(case.service.full_name)
    request, path = case.request(case.value)
    method = f"/{case.service.full_name}/{case.method.name}"
    logged_before = len(servers.mind.output)

    error = await refusal(
        target,
        method,
        request_streaming=case.method.client_streaming,
        response_streaming=case.method.server_streaming,
        metadata=metadata,
        frames=(request.SerializeToString(),),
    )

    details = error.details() or ""
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, details
    assert f"{path}: {case.value} is not a valid {case.enum.full_name}; expected one of " in (
        details
    )
    if case.service.full_name != "tobe.v1.FaceGateway":
        new_lines = lambda: servers.mind.output[logged_before:]  # noqa: E731
        (refused,) = wait_for_lines(new_lines, f"refused {method}: {path}", 1)
        assert not [line for line in new_lines() if "Traceback" in line], new_lines()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_zero_passes_the_edge_and_no_servicer_answers_it_with_an_internal_error(
    servers: Servers, case: Case
) -> None:
    """What UNSPECIFIED means is each servicer's to say (a default, or a refusal by name).

    So that the zero gets past more of the checks that come before it, the request names a person
    (`on_behalf_of`, the contract's convention) and a stream opens with its `hello` frame.
    """
    target, metadata = servers.target(case.service.full_name)
    request, _ = case.request(0)
    method = f"/{case.service.full_name}/{case.method.name}"
    fields = case.method.input_type.fields_by_name
    if "on_behalf_of" in fields:
        on_behalf_of: Any = request.on_behalf_of
        on_behalf_of.principal = "alice"
        on_behalf_of.scopes[:] = ["chat", "approve"]
    if "request_id" in fields:
        request.request_id = "zero"
    frames = [request]
    if case.method.client_streaming and "hello" in fields and case.fields[0].name != "hello":
        hello = type(request)()
        hello.hello.SetInParent()
        frames.insert(0, hello)

    statuses = await statuses_of(target, method, case.method, metadata, frames)

    assert statuses, "the call ended without a status"
    for code, details in statuses:
        assert code not in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN), details
        assert "is not a valid" not in details


async def statuses_of(
    target: str,
    method: str,
    descriptor: MethodDescriptor,
    metadata: tuple[tuple[str, str], ...],
    frames: list[Message],
) -> list[tuple[grpc.StatusCode, str]]:
    """The statuses a call sending `frames` (one unless streaming; then half-closing) gets:
    the error of each command a Face reply answers, and the one the call ends with."""
    raws = [frame.SerializeToString() for frame in frames]
    parse = message_factory.GetMessageClass(descriptor.output_type).FromString
    statuses: list[tuple[grpc.StatusCode, str]] = []
    async with grpc.aio.insecure_channel(target) as channel:
        try:
            if descriptor.client_streaming:
                call = channel.stream_stream(method)(metadata=metadata, timeout=20)
                for raw in raws:
                    await call.write(raw)
                await call.done_writing()
                while (response := await call.read()) is not grpc.aio.EOF:
                    statuses.extend(_command_error(parse(response)))
            elif descriptor.server_streaming:
                (raw,) = raws
                async for _ in channel.unary_stream(method)(raw, metadata=metadata, timeout=20):
                    pass
            else:
                (raw,) = raws
                await channel.unary_unary(method)(raw, metadata=metadata, timeout=20)
        except grpc.aio.AioRpcError as error:
            return [*statuses, (error.code(), error.details() or "")]
    return [*statuses, (grpc.StatusCode.OK, "")]


def _command_error(response: Message) -> list[tuple[grpc.StatusCode, str]]:
    """A Face reply's `error`: one command's status, on a stream that goes on."""
    if "reply" not in response.DESCRIPTOR.fields_by_name:
        return []
    reply: Any = response.reply
    if reply.WhichOneof("result") != "error":
        return []
    code = next(c for c in grpc.StatusCode if c.value[0] == reply.error.code)
    return [(code, reply.error.message)]


@pytest.mark.parametrize(
    "method", WITHOUT_ENUMS, ids=[f"{m.containing_service.name}.{m.name}" for m in WITHOUT_ENUMS]
)
def test_a_method_whose_request_holds_no_enum_is_not_walked_at_all(
    method: MethodDescriptor,
) -> None:
    """The server's own check agrees: it does not look into these requests."""
    assert not has_enum_field(method.input_type)


async def test_a_later_hand_frame_with_an_undefined_enum_ends_the_stream_and_detaches_it(
    servers: Servers,
) -> None:
    mind = servers.mind
    hello = hand_pb2.AttachRequest(hello=hand_pb2.HandHello(name="laptop"))
    tool = hand_pb2.ToolSpec(name="save", effect=7)
    changed = hand_pb2.AttachRequest(tools_changed=hand_pb2.ToolsChanged(tools=[tool]))
    logged_before = len(mind.output)

    error = await refusal(
        mind.address,
        "/tobe.v1.HandLink/Attach",
        request_streaming=True,
        response_streaming=True,
        metadata=bearer_metadata(servers.hand_token),
        frames=(hello.SerializeToString(), changed.SerializeToString()),
    )

    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert (error.details() or "").startswith("tools_changed.tools[0].effect: 7 is not a valid")
    new_lines = lambda: mind.output[logged_before:]  # noqa: E731
    assert wait_for_lines(new_lines, "hand laptop detached", 1), new_lines()


async def test_a_later_face_frame_with_an_undefined_enum_ends_the_connection(
    servers: Servers,
) -> None:
    hello = face_pb2.ConnectRequest(request_id="h", hello=face_pb2.Hello())
    decide = face_pb2.DecideApprovalCommand(approval_id="a", decision=99)
    bad = face_pb2.ConnectRequest(request_id="d", decide_approval=decide)
    target, metadata = servers.target("tobe.v1.FaceGateway")

    error = await refusal(
        target,
        "/tobe.v1.FaceGateway/Connect",
        request_streaming=True,
        response_streaming=True,
        metadata=metadata,
        frames=(hello.SerializeToString(), bad.SerializeToString()),
    )

    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    assert (error.details() or "").startswith(
        "malformed frame: decide_approval.decision: 99 is not a valid tobe.v1.ApprovalDecision"
    )
