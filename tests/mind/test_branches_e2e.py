"""Branching a conversation at a message, through a real Mind with the Scripted provider, on
SQLite and PostgreSQL: each history is right (what is listed and what the model is sent in
the next turn of each), and compacting one changes nothing of the other."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import grpc
import pytest
from helpers.mind_gateway import Gateway, ended_runs, payloads
from helpers.mind_process import MindProcess, running_mind
from helpers.store_backend import rows

from tobe.v1 import common_pb2, mind_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.pg_e2e]

EARLY, LATE, BRANCHED = "SUMMARY-EARLY", "SUMMARY-LATE", "SUMMARY-BRANCH"
LATER_PARENT_TURNS = [f"parent turn {n:02d}" for n in range(6, 11)]

# The summariser's answer tells which messages it folded: turns past the 5th (the parent's
# second compaction), the copied summary with turns up to the 5th (the branch's), or the first
# turns alone (the parent's first). Each parent turn calls a tool, so the branch copies tool
# calls, results and their cards. What the next turn of each side is sent is checked by the
# model itself (`expect`): a failed expectation ends the run FAILED, naming it.
SCRIPT = f"""
summaries:
  - {{match: "parent turn 0[6-9]", text: "{LATE}"}}
  - {{match: "(?s){EARLY}.*parent turn", text: "{BRANCHED}"}}
  - {{match: "parent turn", text: "{EARLY}"}}
runs:
  - match: "slow turn"
    steps:
      - {{delay: 60, text: "late"}}
  - match: "branch turn 06"
    steps:
      - expect:
          request_contains: ["{EARLY}", "parent turn 04", "parent turn 05"]
          request_excludes: {json.dumps([LATE, *LATER_PARENT_TURNS])}
        text: "On the branch."
  - match: "branch turn 07"
    steps:
      - expect:
          request_contains: ["{BRANCHED}", "branch turn 07"]
          request_excludes: {json.dumps([EARLY, LATE, *LATER_PARENT_TURNS])}
        text: "Still on the branch."
  - match: "parent turn 11"
    steps:
      - expect:
          request_contains: ["{LATE}", "parent turn 09", "parent turn 10"]
          request_excludes: ["branch turn", "{BRANCHED}"]
        text: "Back on the parent."
  - match: "parent turn 12"
    steps:
      - expect:
          request_contains: ["{LATE}", "parent turn 11"]
          request_excludes: ["branch turn", "{BRANCHED}"]
        text: "The parent again."
  - match: "parent turn"
    steps:
      - tool_calls: [{{name: current_time, arguments: {{timezone: "UTC"}}}}]
      - expect: {{last_role: tool}}
        text: "Noted."
"""


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory, module_store: str) -> Iterator[MindProcess]:
    root = tmp_path_factory.mktemp("branches")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    # A model with a known window: compaction needs one.
    model = {"id": "roomy", "context_window": 100_000, "max_output": 512}
    env = {"TOBE_PROVIDER__MODEL": "roomy", "TOBE_PROVIDER__MODELS": json.dumps([model])}
    with running_mind(root, script=script, **env) as process:
        yield process


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    client = Gateway.connect(mind)
    try:
        yield client
    finally:
        client.close()


def _key() -> str:
    return f"p_{uuid.uuid4().hex[:12]}"


def _turn(gateway: Gateway, key: str, text: str) -> None:
    start = gateway.head()
    run_id = gateway.send(key, text, uuid.uuid4().hex).run_id
    events = gateway.wait_runs_ended(start, {run_id})
    ended = [r for r in payloads(events, "run_changed") if r.id == run_id and r.state != 1]
    assert [r.state for r in ended] == [common_pb2.RUN_STATE_COMPLETED], ended[-1].reason


def _compact(gateway: Gateway, key: str) -> None:
    request = mind_pb2.CompactConversationRequest(
        on_behalf_of=gateway.who("alice"), conversation_key=key
    )
    gateway.stub.CompactConversation(request, metadata=gateway.md, timeout=60)


def _branch(
    gateway: Gateway, origin: str, message_id: int, principal: str = "alice", **fields: str
) -> mind_pb2.BranchConversationResponse:
    request = mind_pb2.BranchConversationRequest(
        on_behalf_of=gateway.who(principal),
        conversation_key=origin,
        message_id=message_id,
        **fields,
    )
    return gateway.stub.BranchConversation(request, metadata=gateway.md, timeout=30)


def _summaries(mind: MindProcess, key: str) -> list[tuple[int, int, str]]:
    return [
        tuple(row)
        for row in rows(
            mind.url,
            "SELECT generation, through_message_id, text FROM summaries "
            "WHERE conversation_key = ? ORDER BY generation",
            key,
        )
    ]


def _generation(mind: MindProcess, key: str) -> int:
    return rows(mind.url, "SELECT context_generation FROM conversations WHERE key = ?", key)[0][0]


def _shape(messages) -> list[tuple[int, str]]:
    """Role and text of each message: what a branch's copy must repeat."""
    return [(m.role, m.text) for m in messages]


def _calls(messages) -> list[str]:
    return [m.tool_call_id for m in messages if m.tool_call_id]


def test_a_branch_at_turn_5_of_10_continues_apart_from_its_parent(
    mind: MindProcess, gateway: Gateway
):
    parent = gateway.create(_key())
    for turn in range(1, 11):
        _turn(gateway, parent, f"parent turn {turn:02d}")
        if turn in (3, 8):
            _compact(gateway, parent)
    history = list(gateway.history(parent).messages)
    point = [m for m in history if m.text == "Noted."][4]  # turn 5's reply
    early, late = _summaries(mind, parent)
    assert early[2] == EARLY and late[2] == LATE
    assert early[1] <= point.id < late[1], "one summary before the branch point, one past it"

    answer = _branch(gateway, parent, point.id)
    branch = answer.conversation.key

    kept = [m for m in history if m.id <= point.id]
    copied = list(gateway.history(branch).messages)
    assert answer.messages_copied == len(kept) == len(copied)
    assert _shape(copied) == _shape(kept)
    assert not set(_calls(copied)) & set(_calls(history)), "each call has an id of its own"
    assert answer.conversation.branched_from_key == parent
    assert answer.conversation.branched_from_message_id == point.id
    assert answer.conversation.owner == "alice" and answer.conversation.title.endswith("(branch)")
    # The summary before the branch point came along, standing for the same messages.
    [(generation, through, text)] = _summaries(mind, branch)
    assert (generation, text) == (1, EARLY) and _generation(mind, branch) == 1
    covered = [m.id for m in copied if m.id <= through]
    assert len(covered) == len([m for m in kept if m.id <= early[1]])

    _turn(gateway, branch, "branch turn 06")
    _turn(gateway, parent, "parent turn 11")
    assert _shape(gateway.history(branch).messages)[len(kept) :] == [
        (common_pb2.MESSAGE_ROLE_USER, "branch turn 06"),
        (common_pb2.MESSAGE_ROLE_ASSISTANT, "On the branch."),
    ]
    parent_now = list(gateway.history(parent).messages)
    assert _shape(parent_now)[: len(history)] == _shape(history)
    assert not any("branch turn" in m.text for m in parent_now)

    parent_summaries = _summaries(mind, parent)
    _compact(gateway, branch)
    assert [s[2] for s in _summaries(mind, branch)] == [EARLY, BRANCHED]
    assert _summaries(mind, parent) == parent_summaries and _generation(mind, parent) == 2
    _turn(gateway, branch, "branch turn 07")
    _turn(gateway, parent, "parent turn 12")
    assert _summaries(mind, parent) == parent_summaries


def test_a_member_branches_a_group_conversation_into_one_of_their_own(gateway: Gateway):
    group = gateway.create(f"g_{uuid.uuid4().hex[:12]}", members=("bob",))
    _turn(gateway, group, "parent turn 01")
    last = gateway.history(group).messages[-1]

    answer = _branch(gateway, group, last.id, principal="bob", title="Bob's way")

    assert answer.conversation.owner == "bob" and list(answer.conversation.members) == []
    assert answer.conversation.title == "Bob's way"
    with pytest.raises(grpc.RpcError) as refused:
        gateway.history(answer.conversation.key, principal="alice")
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND


def _conversations(mind: MindProcess) -> int:
    return rows(mind.url, "SELECT COUNT(*) FROM conversations")[0][0]


def _refused(gateway: Gateway, *args, **kwargs) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        _branch(gateway, *args, **kwargs)
    return refused.value


def test_bad_branch_requests_are_refused_clearly_and_change_nothing(
    mind: MindProcess, gateway: Gateway
):
    mine, other = gateway.create(_key()), gateway.create(_key())
    _turn(gateway, mine, "parent turn 01")
    _turn(gateway, other, "parent turn 01")
    message = gateway.history(mine).messages[-1].id
    elsewhere = gateway.history(other).messages[-1].id
    before = _conversations(mind)

    unknown = _refused(gateway, mine, 10**12)
    assert unknown.code() == grpc.StatusCode.NOT_FOUND and "no message" in unknown.details()
    foreign = _refused(gateway, mine, elsewhere)
    assert foreign.code() == grpc.StatusCode.NOT_FOUND
    assert _refused(gateway, mine, message, principal="bob").code() == grpc.StatusCode.NOT_FOUND
    assert _refused(gateway, mine, 0).code() == grpc.StatusCode.INVALID_ARGUMENT
    assert _refused(gateway, mine, message, key="x").code() == grpc.StatusCode.INVALID_ARGUMENT
    taken = _refused(gateway, mine, message, key=other)
    assert taken.code() == grpc.StatusCode.ALREADY_EXISTS

    start = gateway.head()
    slow = gateway.send(mine, "slow turn", uuid.uuid4().hex).run_id
    asked = gateway.history(mine).messages[-1]
    assert asked.text == "slow turn"
    running = _refused(gateway, mine, asked.id)
    assert running.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "still running" in running.details()
    # A message before the running run is a fine branch point.
    assert _branch(gateway, mine, message).messages_copied > 0
    assert _conversations(mind) == before + 1
    cancel = mind_pb2.CancelRunRequest(on_behalf_of=gateway.who("alice"), conversation_key=mine)
    gateway.stub.CancelRun(cancel, metadata=gateway.md, timeout=10)
    assert slow in ended_runs(gateway.wait_runs_ended(start, {slow}))
