"""Every Mind refusal has one kind, and the kind alone gives its status code: the one table
(`mind.status_codes`) lists each kind once, every Mind servicer maps by it, and a refusal of
each kind reaches a real gRPC client of the Mind and of Management with its code and message."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from sqlalchemy.exc import SQLAlchemyError

import mind
from mind.api.mind_servicer import MindServicer
from mind.conversation.access import Viewer
from mind.credentials import Identity
from mind.credentials.interceptor import AuthInterceptor
from mind.errors import MindError
from mind.events.views import CompactionView
from mind.management.servicer import MANAGEMENT_STATUS_CODES, ManagementServicer
from mind.remote.servicer import HandLinkServicer
from mind.status_codes import STATUS_CODES
from tobe.runtime.channel import bearer_metadata, open_channel
from tobe.runtime.server import GrpcServer, ServiceSpec, start_server
from tobe.runtime.status import status_of
from tobe.v1 import management_pb2, management_pb2_grpc, mind_pb2, mind_pb2_grpc

KINDS = sorted(STATUS_CODES, key=lambda kind: kind.__name__)
GATEWAY = Identity("cred-g", "service", "face", ("gateway",))


def _every_mind_module_imported() -> None:
    for module in pkgutil.walk_packages(mind.__path__, "mind."):
        importlib.import_module(module.name)


def _subclasses(base: type[MindError]) -> Iterator[type[MindError]]:
    for sub in base.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _refusal(kind: type[MindError]) -> MindError:
    return kind(f"refused as {kind.__name__}: nothing changed")


def test_every_refusal_class_of_the_mind_has_exactly_one_kind_in_the_table() -> None:
    _every_mind_module_imported()
    refusals = set(_subclasses(MindError))
    kinds_of = {cls: [k for k in cls.__mro__ if k in STATUS_CODES] for cls in refusals}
    assert {cls.__qualname__: kinds for cls, kinds in kinds_of.items() if len(kinds) != 1} == {}
    # The walk reaches the packages' own refusals, not just the kinds.
    names = {cls.__name__ for cls in refusals}
    assert {"CredentialAlreadyRevoked", "HandNameTaken", "MemoryRefused", "ToolClash"} <= names


def test_the_table_lists_each_kind_once_each_with_its_own_code() -> None:
    assert set(STATUS_CODES) == set(MindError.__subclasses__())
    assert len(set(STATUS_CODES.values())) == len(STATUS_CODES)
    for kind, code in STATUS_CODES.items():
        assert status_of(_refusal(kind), STATUS_CODES) == (code, str(_refusal(kind)))


def test_the_mind_management_and_handlink_servicers_map_refusals_by_the_one_table() -> None:
    assert dict(MindServicer.status_table) == dict(STATUS_CODES)  # type: ignore[attr-defined]
    assert dict(HandLinkServicer.status_table) == dict(STATUS_CODES)  # type: ignore[attr-defined]
    management = dict(ManagementServicer.status_table)  # type: ignore[attr-defined]
    assert management.pop(SQLAlchemyError) is MANAGEMENT_STATUS_CODES[SQLAlchemyError]
    assert management == dict(STATUS_CODES)


class RefusingRuns:
    """The runs API group: refuses every compaction with the error it is given."""

    def __init__(self) -> None:
        self.refusal: Exception = RuntimeError("no refusal set")

    async def compact(self, viewer: Viewer, key: str) -> CompactionView:
        raise self.refusal


class RefusingService:
    """Refuses every credential lookup with the error it is given."""

    def __init__(self) -> None:
        self.refusal: Exception = RuntimeError("no refusal set")

    async def get_credential(self, credential_id: str) -> object:
        raise self.refusal


async def _gateway(token: str) -> Identity | None:
    return GATEWAY if token == "gateway-token" else None


async def _serve(spec: ServiceSpec, **options: Any) -> tuple[GrpcServer, grpc.aio.Channel]:
    server = await start_server([spec], ["127.0.0.1:0"], **options)
    return server, open_channel(f"127.0.0.1:{server.bound['127.0.0.1:0']}")


@pytest.fixture
async def mind_served() -> AsyncIterator[tuple[RefusingRuns, mind_pb2_grpc.MindStub]]:
    manager = RefusingRuns()
    unused: Any = None  # only the runs group takes part in a compaction
    servicer = MindServicer(
        SimpleNamespace(runs=manager),  # type: ignore[arg-type]
        unused,
        unused,
        _gateway,
        approvals=unused,
        pairing=unused,
        revocation_reports=unused,
    )
    spec = ServiceSpec(
        "tobe.v1.Mind", lambda server: mind_pb2_grpc.add_MindServicer_to_server(servicer, server)
    )
    server, channel = await _serve(spec, interceptors=[AuthInterceptor(_gateway)])
    try:
        yield manager, mind_pb2_grpc.MindStub(channel)
    finally:
        await channel.close()
        await server.stop(None)


@pytest.fixture
async def management_served() -> AsyncIterator[
    tuple[RefusingService, management_pb2_grpc.ManagementStub]
]:
    service = RefusingService()
    servicer = ManagementServicer(service)  # type: ignore[arg-type]
    spec = ServiceSpec(
        "tobe.v1.Management",
        lambda server: management_pb2_grpc.add_ManagementServicer_to_server(servicer, server),
    )
    server, channel = await _serve(spec)
    try:
        yield service, management_pb2_grpc.ManagementStub(channel)
    finally:
        await channel.close()
        await server.stop(None)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.__name__)
async def test_a_refusal_of_each_kind_reaches_a_mind_client_with_its_code(
    mind_served: tuple[RefusingRuns, mind_pb2_grpc.MindStub], kind: type[MindError]
) -> None:
    manager, stub = mind_served
    manager.refusal = _refusal(kind)
    request = mind_pb2.CompactConversationRequest(
        on_behalf_of=mind_pb2.OnBehalfOf(principal="alice", scopes=["chat"]),
        conversation_key="p_k",
    )
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.CompactConversation(
            request, metadata=bearer_metadata("gateway-token"), timeout=10
        )
    assert (caught.value.code(), caught.value.details()) == (
        STATUS_CODES[kind],
        str(manager.refusal),
    )


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.__name__)
async def test_a_refusal_of_each_kind_reaches_a_management_client_with_its_code(
    management_served: tuple[RefusingService, management_pb2_grpc.ManagementStub],
    kind: type[MindError],
) -> None:
    service, stub = management_served
    service.refusal = _refusal(kind)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetCredential(management_pb2.GetCredentialRequest(id="cred-1"), timeout=10)
    assert (caught.value.code(), caught.value.details()) == (
        STATUS_CODES[kind],
        str(service.refusal),
    )
