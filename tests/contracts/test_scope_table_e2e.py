"""Every RPC of every tobe.v1 service, walked from the generated descriptors, against the real
servers over loopback: for each set of scopes a credential may hold, the call is let through or
refused PERMISSION_DENIED naming the scope it lacks, exactly as `tobe.scopes` declares.

A new RPC, Face command or service without a declaration, or without a check here, fails.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from helpers.eventually import eventually
from helpers.face_client import FaceClient, refusal
from helpers.face_process import FaceProcess, running_face
from helpers.mind_process import MindProcess, issue_token, running_mind

import tobe.v1
from tobe.runtime.channel import bearer_metadata
from tobe.scopes import REQUIRED, face_command_scope
from tobe.v1 import face_pb2, hand_pb2

pytestmark = pytest.mark.e2e

BOUND = 15.0  # only keeps a broken build from hanging
DENIED = grpc.StatusCode.PERMISSION_DENIED
# The scopes `on_behalf_of` names (what the Face forwards of a client's credential).
USER_SCOPE_SETS = [
    (),
    ("chat",),
    ("approve",),
    ("post",),
    ("admin",),
    ("chat", "approve"),
    ("chat", "approve", "post", "admin"),
]
# The client credentials that connect to the Face.
CLIENT_SCOPE_SETS = [(), ("chat",), ("approve",), ("post",), ("chat", "approve", "admin")]
AWARENESS_TOKEN = "scope-table-link-token-7c1e"


def services() -> list[ServiceDescriptor]:
    found = []
    for module in pkgutil.iter_modules(tobe.v1.__path__):
        if module.name.endswith("_pb2"):
            descriptor = importlib.import_module(f"tobe.v1.{module.name}").DESCRIPTOR
            found.extend(descriptor.services_by_name.values())
    return sorted(found, key=lambda service: service.full_name)


def message_class(descriptor: Any) -> type[Message]:
    module = importlib.import_module(f"tobe.v1.{Path(descriptor.file.name).stem}_pb2")
    cls: type[Message] = getattr(module, descriptor.name)
    return cls


@dataclass
class Outcome:
    code: grpc.StatusCode
    details: str

    @property
    def scope_refused(self) -> bool:
        return self.code == DENIED and "lacks scope" in self.details


async def invoke(
    channel: grpc.aio.Channel,
    method: MethodDescriptor,
    request: Message,
    metadata: tuple[tuple[str, str], ...] = (),
    *,
    patience: float = BOUND,
) -> Outcome:
    """One call of `method`; OK when it answered (a stream: its first response came), the
    status otherwise. A stream that stays quiet for `patience` is not refused either."""
    path = f"/{method.containing_service.full_name}/{method.name}"
    serialize = type(request).SerializeToString
    try:
        if method.server_streaming:
            stream = channel.unary_stream(path, request_serializer=serialize)(
                request, metadata=metadata, timeout=patience
            )
            await stream.read()
            stream.cancel()
        else:
            await channel.unary_unary(path, request_serializer=serialize)(
                request, metadata=metadata, timeout=BOUND
            )
    except grpc.aio.AioRpcError as ended:
        return Outcome(ended.code(), ended.details() or "")
    return Outcome(grpc.StatusCode.OK, "")


@dataclass
class Stack:
    mind: MindProcess
    face: FaceProcess
    awareness_target: str
    tokens: dict[str, str]

    def md(self, name: str) -> tuple[tuple[str, str], ...]:
        return bearer_metadata(self.tokens[name])


def client_name(scopes: tuple[str, ...]) -> str:
    return "client:" + ",".join(scopes)


@contextmanager
def running_awareness(root: Path) -> Iterator[str]:
    """A real `tobe awareness serve` on a Unix socket with the link token; its target."""
    socket = root / "a.sock"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(
        TOBE_CONFIG=str(root / "absent.toml"),
        TOBE_DATA_DIR=str(root / "data"),
        TOBE_AWARENESS__LISTEN=f"unix:{socket}",
        TOBE_AWARENESS__ADAPTERS_DIR=str(root / "adapters"),
        TOBE_AWARENESS__BUILTIN_ADAPTERS="false",
        TOBE_AWARENESS__TOKEN=AWARENESS_TOKEN,
    )
    (root / "adapters").mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "tobe", "awareness", "serve"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    target = f"unix:{socket}"
    try:
        eventually(lambda: socket.exists() and _serving(target), what="awareness serving")
        yield target
    finally:
        process.kill()
        process.wait()


def _serving(target: str) -> bool:
    with grpc.insecure_channel(target) as channel:
        try:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
        except grpc.RpcError:
            return False
    return True


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    base = Path(tmp_path_factory.mktemp("scopes", numbered=True))
    short = Path(tempfile.mkdtemp(prefix="scp-"))  # a Unix socket path stays short
    with (
        running_mind(base, script=None, clients=()) as mind,
        running_face(mind, web=False) as face,
        running_awareness(short) as awareness,
    ):
        url = mind.url
        tokens = {
            "gateway": mind.gateway_token,
            "service without gateway": issue_token(url, kind="service", principal="svc", scopes=[]),
            "hand": issue_token(url, kind="hand", principal="pi", scopes=["hand:garden"]),
            "client with every scope": issue_token(
                url, kind="client", principal="ann", scopes=["chat", "approve", "post", "admin"]
            ),
        }
        for scopes in CLIENT_SCOPE_SETS:
            tokens[client_name(scopes)] = issue_token(
                url, kind="client", principal="ann", scopes=list(scopes)
            )
        yield Stack(mind, face, awareness, tokens)


@pytest.fixture
async def mind_channel(stack: Stack) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(stack.mind.address) as channel:
        yield channel


async def check_mind(stack: Stack, channel: grpc.aio.Channel, method: MethodDescriptor) -> None:
    """Gateway calls: `gateway` for the caller, the method's own scope for on_behalf_of."""
    name, requirement = method.name, REQUIRED[f"/tobe.v1.Mind/{method.name}"]
    request_class = message_class(method.input_type)
    scoped = "on_behalf_of" in request_class.DESCRIPTOR.fields_by_name
    assert scoped or requirement.user_scope is None, f"{name} names nobody to check"

    def request(scopes: tuple[str, ...]) -> Message:
        made = request_class()
        if scoped:
            made.on_behalf_of.principal = "alice"  # type: ignore[attr-defined]
            made.on_behalf_of.scopes.extend(scopes)  # type: ignore[attr-defined]
        return made

    for scopes in USER_SCOPE_SETS:
        outcome = await invoke(channel, method, request(scopes), stack.md("gateway"))
        needed = requirement.user_scope
        if needed is not None and needed not in scopes:
            assert (outcome.code, outcome.details) == (
                DENIED,
                f"alice's credential lacks scope '{needed}' (needed for {name})",
            ), scopes
        else:
            assert not outcome.scope_refused, (name, scopes, outcome)
    every = USER_SCOPE_SETS[-1]
    for caller in ("service without gateway", "hand", "client with every scope"):
        outcome = await invoke(channel, method, request(every), stack.md(caller))
        assert outcome.code == DENIED, (name, caller, outcome)
        assert f"lacks scope 'gateway' (needed for {name})" in outcome.details


async def check_hand_link(
    stack: Stack, channel: grpc.aio.Channel, method: MethodDescriptor
) -> None:
    """A Hand attaches with a `hand` credential, under a name its scopes grant."""
    assert method.name == "Attach", f"no scope check written for HandLink.{method.name}"
    path = f"/{method.containing_service.full_name}/{method.name}"

    async def attach(caller: str, name: str) -> hand_pb2.AttachResponse | Outcome:
        call = channel.stream_stream(
            path,
            request_serializer=hand_pb2.AttachRequest.SerializeToString,
            response_deserializer=hand_pb2.AttachResponse.FromString,
        )(metadata=stack.md(caller), timeout=BOUND)
        try:
            await call.write(hand_pb2.AttachRequest(hello=hand_pb2.HandHello(name=name)))
            first: hand_pb2.AttachResponse = await call.read()
        except grpc.aio.AioRpcError as ended:
            return Outcome(ended.code(), ended.details() or "")
        finally:
            call.cancel()
        return first

    for caller in ("gateway", "client with every scope"):
        outcome = await attach(caller, "garden")
        assert isinstance(outcome, Outcome) and outcome.code == grpc.StatusCode.UNAUTHENTICATED
        assert "kind 'hand'" in outcome.details
    refused = await attach("hand", "shed")
    assert isinstance(refused, Outcome) and refused.code == DENIED, refused
    assert "'hand:<name>' scope (e.g. 'hand:shed')" in refused.details
    welcomed = await attach("hand", "garden")
    assert isinstance(welcomed, hand_pb2.AttachResponse), welcomed
    assert welcomed.welcome.hand_name == "garden"


async def check_face(stack: Stack, method: MethodDescriptor) -> None:
    """A client credential connects; each command needs its scope (`face_command_scope`)."""
    assert method.name == "Connect", f"no scope check written for FaceGateway.{method.name}"
    assert await refusal(stack.face.address, stack.tokens["gateway"]) == (
        grpc.StatusCode.UNAUTHENTICATED
    )
    frames = face_pb2.ConnectRequest.DESCRIPTOR.oneofs_by_name["frame"].fields
    for scopes in CLIENT_SCOPE_SETS:
        client = await FaceClient.connect(stack.face.address, stack.tokens[client_name(scopes)])
        try:
            for frame in frames:
                needed = face_command_scope(frame.name)
                if frame.name == "hello":
                    continue
                command = message_class(frame.message_type)()
                reply = await client.command(**{frame.name: command})
                error = (reply.error.code, reply.error.message)
                if needed is not None and needed not in scopes:
                    assert error == (
                        DENIED.value[0],
                        f"this credential lacks scope '{needed}' (needed for {frame.name})",
                    ), (scopes, frame.name)
                else:
                    assert not (error[0] == DENIED.value[0] and "lacks scope" in error[1]), (
                        scopes,
                        frame.name,
                        error,
                    )
        finally:
            await client.close()


async def check_management(
    stack: Stack, channel: grpc.aio.Channel, method: MethodDescriptor
) -> None:
    """No credential: the owner-only Unix socket is the guard; the TCP port does not serve it."""
    request = message_class(method.input_type)()
    socket = f"unix:{stack.mind.data_dir / 'mind.sock'}"
    async with grpc.aio.insecure_channel(socket) as local:
        outcome = await invoke(local, method, request)
    assert outcome.code not in (grpc.StatusCode.UNAUTHENTICATED, DENIED), (method.name, outcome)
    over_tcp = await invoke(channel, method, request, stack.md("gateway"))
    assert over_tcp.code == grpc.StatusCode.UNIMPLEMENTED, (method.name, over_tcp)


async def check_awareness(stack: Stack, method: MethodDescriptor) -> None:
    """The link token is the guard: a Mind credential is no key to Awareness."""
    request = message_class(method.input_type)()
    async with grpc.aio.insecure_channel(stack.awareness_target) as channel:
        linked = await invoke(
            channel, method, request, bearer_metadata(AWARENESS_TOKEN), patience=2.0
        )
        assert linked.code != grpc.StatusCode.UNAUTHENTICATED, (method.name, linked)
        for caller in ("gateway", "client with every scope"):
            refused = await invoke(channel, method, request, stack.md(caller))
            assert refused.code == grpc.StatusCode.UNAUTHENTICATED, (method.name, refused)


CALLS = [
    pytest.param(service, method, id=f"{service.name}.{method.name}")
    for service in services()
    for method in service.methods
]


@pytest.mark.parametrize(("service", "method"), CALLS)
async def test_every_rpc_admits_exactly_the_scopes_it_declares(
    stack: Stack,
    mind_channel: grpc.aio.Channel,
    service: ServiceDescriptor,
    method: MethodDescriptor,
) -> None:
    assert f"/{service.full_name}/{method.name}" in REQUIRED, "no scope declared"
    match service.name:
        case "Mind":
            await check_mind(stack, mind_channel, method)
        case "HandLink":
            await check_hand_link(stack, mind_channel, method)
        case "FaceGateway":
            await check_face(stack, method)
        case "Management":
            await check_management(stack, mind_channel, method)
        case "Awareness":
            await check_awareness(stack, method)
        case _:
            pytest.fail(f"no scope check written for service {service.full_name}")
