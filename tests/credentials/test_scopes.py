"""The one scope set (`tobe.scopes`): which names credential creation accepts, and that every
RPC of every tobe.v1 service and every Face command declares the scope it needs."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import tobe.v1
from mind.credentials.pairing import SCOPES as PAIRED_SCOPES
from mind.management.local_credentials import local_credentials
from tobe.scopes import (
    FACE_COMMANDS,
    FACE_UNSCOPED,
    REQUIRED,
    SCOPES,
    UnknownScope,
    check_scopes,
    face_command_scope,
    valid_scopes,
)
from tobe.v1 import face_pb2


def rpc_names() -> set[str]:
    """`/package.Service/Method` of every RPC the generated descriptors define."""
    names = set()
    for module in pkgutil.iter_modules(tobe.v1.__path__):
        if module.name.endswith("_pb2"):
            descriptor = importlib.import_module(f"tobe.v1.{module.name}").DESCRIPTOR
            for service in descriptor.services_by_name.values():
                names.update(f"/{service.full_name}/{m.name}" for m in service.methods)
    return names


def test_every_rpc_of_every_service_declares_what_it_needs_and_nothing_else_is_declared() -> None:
    assert sorted(rpc_names() - REQUIRED.keys()) == []
    assert sorted(REQUIRED.keys() - rpc_names()) == []


def test_a_call_no_scope_covers_says_what_guards_it() -> None:
    for method, requirement in REQUIRED.items():
        if requirement.scope is None and requirement.user_scope is None:
            assert requirement.guard, method


def test_every_face_command_frame_maps_to_a_scoped_mind_call() -> None:
    frames = {f.name for f in face_pb2.ConnectRequest.DESCRIPTOR.oneofs_by_name["frame"].fields}
    assert sorted(frames - FACE_COMMANDS.keys() - FACE_UNSCOPED - {"subscribe"}) == []
    for frame in frames - FACE_UNSCOPED:
        assert face_command_scope(frame) in {s.name for s in SCOPES}, frame


@pytest.mark.parametrize(
    ("kind", "scopes"),
    [
        ("client", ["chat", "approve", "post", "admin"]),
        ("service", ["gateway"]),
        ("hand", ["serve:alice", "serve-all", "hand:greenhouse"]),
        ("client", []),
    ],
)
def test_the_documented_scopes_are_accepted_for_their_kind(kind: str, scopes: list[str]) -> None:
    check_scopes(kind, scopes)


@pytest.mark.parametrize(
    ("kind", "scope", "why"),
    [
        ("client", "chta", "unknown scope 'chta'"),
        ("client", "CHAT", "unknown scope 'CHAT'"),
        ("hand", "serve:", "unknown scope 'serve:'"),
        ("hand", "hands", "unknown scope 'hands'"),
        ("client", "gateway", "scope 'gateway' is for service credentials, not client"),
        ("service", "serve:alice", "scope 'serve:alice' is for hand credentials, not service"),
    ],
)
def test_an_unknown_or_misplaced_scope_is_refused_with_the_valid_ones(
    kind: str, scope: str, why: str
) -> None:
    with pytest.raises(UnknownScope) as refused:
        check_scopes(kind, [scope])
    message = str(refused.value)
    assert why in message and "\n" not in message
    assert message.endswith(f"valid scopes: {valid_scopes()}")
    assert valid_scopes() == (
        "chat, approve, post, admin (client); gateway (service); "
        "serve:<principal>, serve-all, hand:<name> (hand)"
    )


def test_the_credentials_tobe_up_and_pairing_create_hold_only_documented_scopes() -> None:
    for credential in local_credentials("alice", hand_name="laptop"):
        check_scopes(credential.kind, credential.scopes)
    check_scopes("client", PAIRED_SCOPES)


def test_each_mind_call_needs_the_scope_the_readme_documents() -> None:
    needs: dict[str | None, set[str]] = {}
    for method, requirement in REQUIRED.items():
        if method.startswith("/tobe.v1.Mind/"):
            assert (requirement.kind, requirement.scope) == ("service", "gateway"), method
            needs.setdefault(requirement.user_scope, set()).add(method.rpartition("/")[2])
    assert needs == {
        "chat": {
            "CreateConversation",
            "ListConversations",
            "SendChat",
            "CancelRun",
            "GetSnapshot",
            "GetHistory",
            "CompactConversation",
            "ListProfiles",
            "SetConversationProfile",
            "SetActiveHand",
            "ListMemory",
            "DeleteMemory",
            "ListActions",
            "ChangeSchedule",
            "CreatePairingCode",
            "GetConversationUsage",
            "GetImage",
            "RenameConversation",
            "ArchiveConversation",
            "SearchConversations",
            "BranchConversation",
            "GetWidget",
        },
        "approve": {"DecideApproval", "DecideAction"},
        "post": {"PostMessage"},
        None: {"Authenticate", "Subscribe", "RedeemPairingCode", "SignOut", "ReportRevocation"},
    }
    assert face_command_scope("subscribe") == "chat"
