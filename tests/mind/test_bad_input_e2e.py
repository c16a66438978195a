"""Bad input to a real Mind gets a clear error and writes nothing."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from helpers.mind_gateway import Gateway
from helpers.mind_process import MindProcess, mind_env, run_mind_command, running_mind

from tobe.v1 import mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e


def _code(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code(), caught.value.details()


def test_bad_sends_are_refused_with_a_clear_error_and_write_nothing(shared: Gateway):
    key = shared.create(f"p_{uuid.uuid4().hex[:12]}")
    other = shared.create(f"p_{uuid.uuid4().hex[:12]}", principal="bob")
    head = shared.head()
    oversized = "x" * (64 * 1024 + 1)
    cases = [
        (lambda: shared.send("p_nope", "hi", "k"), grpc.StatusCode.NOT_FOUND, "no conversation"),
        (lambda: shared.send(other, "hi", "k"), grpc.StatusCode.NOT_FOUND, "no conversation"),
        (lambda: shared.send(key, "   ", "k"), grpc.StatusCode.INVALID_ARGUMENT, "text is empty"),
        (lambda: shared.send(key, oversized, "k"), grpc.StatusCode.INVALID_ARGUMENT, "65537 bytes"),
        (lambda: shared.send(key, "hi", ""), grpc.StatusCode.INVALID_ARGUMENT, "idempotency_key"),
        (
            lambda: shared.send(key, "hi", "k" * 129),
            grpc.StatusCode.INVALID_ARGUMENT,
            "idempotency_key",
        ),
        (
            lambda: shared.send(key, "hi", "k", principal=""),
            grpc.StatusCode.INVALID_ARGUMENT,
            "on_behalf_of.principal",
        ),
        (lambda: shared.create("x_bad"), grpc.StatusCode.INVALID_ARGUMENT, "must start with"),
        (lambda: shared.create(key), grpc.StatusCode.ALREADY_EXISTS, "already exists"),
        (
            lambda: shared.create("p_private", members=("bob",)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "group",
        ),
    ]
    for call, code, text in cases:
        got_code, details = _code(call)
        assert (got_code, text in details) == (code, True), details
    assert shared.head() == head
    assert list(shared.history(key).messages) == []


def test_creating_a_taken_key_cannot_probe_which_keys_exist(shared: Gateway):
    """Creating a key someone else holds answers exactly what a snapshot answers."""
    key = shared.create(f"g_{uuid.uuid4().hex[:12]}", members=("bob",))
    absent = f"g_{uuid.uuid4().hex[:12]}"
    taken = _code(lambda: shared.create(key, principal="mallory"))
    assert taken == _code(lambda: shared.snapshot(key, principal="mallory"))
    assert taken == (grpc.StatusCode.NOT_FOUND, f"no conversation {key!r}")
    assert _code(lambda: shared.snapshot(absent, principal="mallory")) == (
        grpc.StatusCode.NOT_FOUND,
        f"no conversation {absent!r}",
    )
    # Those who can see the conversation learn nothing new from ALREADY_EXISTS.
    for principal in ("alice", "bob"):
        code, _ = _code(lambda: shared.create(key, principal=principal))  # noqa: B023
        assert code == grpc.StatusCode.ALREADY_EXISTS


def test_a_group_conversation_is_created_with_at_most_the_member_limit(shared: Gateway):
    head = shared.head()
    too_many = tuple(f"m{i}" for i in range(257))
    key = f"g_{uuid.uuid4().hex[:12]}"
    code, details = _code(lambda: shared.create(key, members=too_many))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "257" in details and "maximum is 256" in details and "mind.max_members" in details
    assert shared.head() == head
    assert shared.create(key, members=too_many[:256]) == key


def test_a_foreign_conversation_is_not_found_but_members_and_admins_see_it(shared: Gateway):
    key = shared.create(f"g_{uuid.uuid4().hex[:12]}", members=("bob",))
    assert shared.snapshot(key, principal="bob").conversation.members == ["bob"]
    code, _ = _code(lambda: shared.snapshot(key, principal="mallory"))
    assert code == grpc.StatusCode.NOT_FOUND
    request = mind_pb2.GetSnapshotRequest(
        on_behalf_of=mind_pb2.OnBehalfOf(principal="root", scopes=["chat", "admin"]),
        conversation_key=key,
    )
    assert shared.stub.GetSnapshot(request, metadata=shared.md).conversation.owner == "alice"
    listed = shared.stub.ListConversations(
        mind_pb2.ListConversationsRequest(on_behalf_of=shared.who("mallory")), metadata=shared.md
    )
    assert key not in [c.key for c in listed.conversations]


def test_conversations_are_listed_newest_first_for_owners_and_members(shared: Gateway):
    suffix = uuid.uuid4().hex[:8]
    older = shared.create(f"p_old{suffix}", principal="carol")
    group = shared.create(f"g_grp{suffix}", principal="dave", members=("carol",))
    newer = shared.create(f"p_new{suffix}", principal="carol")
    listed = shared.stub.ListConversations(
        mind_pb2.ListConversationsRequest(on_behalf_of=shared.who("carol")), metadata=shared.md
    ).conversations
    assert [c.key for c in listed] == [newer, group, older]
    assert all(c.last_event_id > 0 for c in listed)
    created = shared.stub.CreateConversation(
        mind_pb2.CreateConversationRequest(on_behalf_of=shared.who("carol")), metadata=shared.md
    ).conversation
    assert created.key.startswith("p_") and created.owner == "carol"


def test_cancel_without_an_active_run_is_a_failed_precondition(shared: Gateway):
    key = shared.create(f"p_{uuid.uuid4().hex[:12]}")
    request = mind_pb2.CancelRunRequest(on_behalf_of=shared.who("alice"), conversation_key=key)
    code, details = _code(lambda: shared.stub.CancelRun(request, metadata=shared.md))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "no active run" in details


def test_only_gateway_credentials_may_call_and_client_tokens_authenticate(shared: Gateway):
    mind: MindProcess = shared.mind
    client_md = (("authorization", f"Bearer {mind.client_tokens['alice']}"),)
    request = mind_pb2.ListConversationsRequest(on_behalf_of=shared.who("alice"))
    code, details = _code(lambda: shared.stub.ListConversations(request, metadata=client_md))
    assert code == grpc.StatusCode.PERMISSION_DENIED and "gateway" in details
    code, _ = _code(lambda: shared.stub.ListConversations(request))
    assert code == grpc.StatusCode.UNAUTHENTICATED

    identity = shared.stub.Authenticate(
        mind_pb2.AuthenticateRequest(token=mind.client_tokens["alice"]), metadata=shared.md
    ).identity
    assert identity.principal == "alice" and list(identity.scopes) == ["chat"]
    bad = mind_pb2.AuthenticateRequest(token=mind.gateway_token)  # not a client credential
    code, _ = _code(lambda: shared.stub.Authenticate(bad, metadata=shared.md))
    assert code == grpc.StatusCode.UNAUTHENTICATED


def test_resuming_before_the_oldest_kept_event_requires_a_snapshot(tmp_path: Path):
    script = tmp_path / "script.yaml"
    script.write_text("runs: [{match: '.*', steps: [{text: hi}]}]")
    with running_mind(tmp_path, script=script, TOBE_MIND__OUTBOX_KEEP="100") as mind:
        gateway = Gateway.connect(mind)
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(gateway.create, [f"p_many{index}" for index in range(120)]))
        gateway.close()
        mind.restart()  # pruning happens at start
        gateway = Gateway.connect(mind)
        code, details = _code(lambda: gateway.replay(3))
        assert code == grpc.StatusCode.FAILED_PRECONDITION and "snapshot required" in details
        events, head = gateway.replay(20)
        assert events[0].durable_id == 21 and head == 120
        gateway.close()


def test_an_unparseable_script_stops_the_mind_from_starting_and_writes_nothing(tmp_path: Path):
    script = tmp_path / "broken.yaml"
    script.write_text("runs:\n  - match: '('\n    steps: [{text: hi}]\n")
    data_dir = tmp_path / "data"
    result = run_mind_command(mind_env(data_dir, script))
    assert result.returncode != 0
    assert str(script) in result.stderr and "regular expression" in result.stderr
    assert not (data_dir / "tobe.db").exists()


def test_a_second_mind_on_the_same_data_dir_refuses_to_start(shared: Gateway):
    mind: MindProcess = shared.mind
    env = dict(mind.env, TOBE_MIND__LOCK_TIMEOUT="0.2")
    result = run_mind_command(env)
    assert result.returncode != 0
    assert "in use by tobe mind serve" in result.stderr and "state lock" in result.stderr
    # The running Mind is unaffected.
    stub = mind_pb2_grpc.MindStub(shared.channel)
    assert (
        stub.ListConversations(
            mind_pb2.ListConversationsRequest(on_behalf_of=shared.who("alice")), metadata=shared.md
        )
        is not None
    )
