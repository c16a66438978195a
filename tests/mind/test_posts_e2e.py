"""Messages written by code into a real Mind: Mind.PostMessage, the welcome and the error reply.

A post joins the conversation's ordered queue: it appears at once when no run is active, else
right after the active run's replies and before the next queued message's run; a retried post
appears once, even across a kill -9. The welcome opens a new conversation; the error reply
follows a failed run (never a cancelled one); an empty model reply is never stored.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from helpers.mind_gateway import Gateway, ended_runs, payloads
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import common_pb2, events_pb2, mind_pb2

pytestmark = pytest.mark.e2e

WELCOME = "Hello, I am your agent."
ERROR_REPLY = "Sorry, something went wrong on my side."
MAX_BYTES = 2048
ASSISTANT = common_pb2.MESSAGE_ROLE_ASSISTANT
USER = common_pb2.MESSAGE_ROLE_USER
SCRIPT = """
runs:
  - match: "^waits"
    steps:
      - text: "let me wait"
        tool_calls: [{name: wait, arguments: {seconds: 3}}]
      - {text: "waited"}
  - match: "^long"
    steps:
      - tool_calls: [{name: wait, arguments: {seconds: 120}}]
      - {text: "never said"}
  - match: "^fails"
    steps:
      - {error: "upstream overloaded", error_kind: unavailable}
  - match: "^says nothing"
    steps:
      - {text: "  "}
  - match: "^checks then says nothing"
    steps:
      - text: "checking"
        tool_calls: [{name: current_time, arguments: {}}]
      - {text: ""}
  - match: ".*"
    steps:
      - {text: "echo"}
"""


def _key() -> str:
    return f"p_{uuid.uuid4().hex[:12]}"


def _settings() -> dict[str, str]:
    return {
        "TOBE_MIND__WELCOME": WELCOME,
        "TOBE_MIND__ERROR_REPLY": ERROR_REPLY,
        "TOBE_MIND__MAX_MESSAGE_BYTES": str(MAX_BYTES),
    }


@pytest.fixture(scope="module")
def posting_mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    root = tmp_path_factory.mktemp("posting-mind")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(root, script=script, **_settings()) as process:
        yield process


@pytest.fixture
def gateway(posting_mind: MindProcess) -> Iterator[Gateway]:
    client = Gateway.connect(posting_mind)
    try:
        yield client
    finally:
        client.close()


def post(
    gateway: Gateway, key: str, text: str, idem: str, *scopes: str
) -> mind_pb2.PostMessageResponse:
    request = mind_pb2.PostMessageRequest(
        on_behalf_of=gateway.who("alice", *(scopes or ("chat", "post"))),
        conversation_key=key,
        text=text,
        idempotency_key=idem,
    )
    return gateway.stub.PostMessage(request, metadata=gateway.md, timeout=15)


def messages(gateway: Gateway, key: str) -> list[tuple[int, str, str]]:
    """(role, text, posted_by) of every stored message, in order."""
    return [(m.role, m.text, m.posted_by) for m in gateway.history(key).messages]


def posted(events: list[events_pb2.Event], key: str, posted_by: str) -> bool:
    return any(
        e.message_appended.posted_by == posted_by
        for e in events
        if e.conversation_key == key and e.HasField("message_appended")
    )


def welcomed(*rest: tuple[int, str, str]) -> list[tuple[int, str, str]]:
    return [(ASSISTANT, WELCOME, "welcome"), *rest]


def test_a_post_with_no_run_active_appears_at_once(gateway: Gateway) -> None:
    key = gateway.create(_key())
    posted = post(gateway, key, "Your parcel has arrived.", "parcel-1")
    assert not posted.queued and not posted.duplicate and posted.message_id > 0
    history = gateway.history(key).messages
    assert messages(gateway, key) == welcomed((ASSISTANT, "Your parcel has arrived.", "alice"))
    assert history[-1].id == posted.message_id and history[-1].run_id == ""
    assert gateway.snapshot(key).active_run.id == ""  # it started no run


def test_a_post_during_a_run_appears_after_its_final_reply_and_before_the_next_queued_run(
    gateway: Gateway,
) -> None:
    key = gateway.create(_key())
    start = gateway.head()
    first = gateway.send(key, "waits a little", "k1")
    posted = post(gateway, key, "A reminder from code.", "post-1")
    follow_up = gateway.send(key, "and then", "k2")
    assert posted.queued and posted.message_id == 0 and follow_up.queued
    assert [q.text for q in gateway.snapshot(key).queued] == ["and then"]  # posts not listed

    def two_runs_ended(events: list[events_pb2.Event]) -> bool:
        return len(ended_runs([e for e in events if e.conversation_key == key])) == 2

    events = [e for e in gateway.wait_for(start, two_runs_ended) if e.conversation_key == key]
    assert messages(gateway, key) == welcomed(
        (USER, "waits a little", ""),
        (ASSISTANT, "let me wait", ""),
        (common_pb2.MESSAGE_ROLE_TOOL, messages(gateway, key)[3][1], ""),
        (ASSISTANT, "waited", ""),
        (ASSISTANT, "A reminder from code.", "alice"),
        (USER, "and then", ""),
        (ASSISTANT, "echo", ""),
    )
    # On the stream: the first run ends, then the post, then the next run starts.
    order = [
        ("ended", e.run_changed.id)
        if e.HasField("run_changed") and e.run_changed.state != common_pb2.RUN_STATE_RUNNING
        else ("started", e.run_changed.id)
        if e.HasField("run_changed")
        else ("posted", e.message_appended.text)
        if e.HasField("message_appended") and e.message_appended.posted_by
        else None
        for e in events
    ]
    order = [step for step in order if step is not None]
    second_run = [r.id for r in payloads(events, "run_changed") if r.id != first.run_id][0]
    assert order == [
        ("started", first.run_id),
        ("ended", first.run_id),
        ("posted", "A reminder from code."),
        ("started", second_run),
        ("ended", second_run),
    ]
    appended = [m for m in payloads(events, "message_appended") if m.posted_by]
    assert [(m.posted_by, m.run_id) for m in appended] == [("alice", "")]


def test_a_retried_post_returns_the_original_and_appears_once(gateway: Gateway) -> None:
    key = gateway.create(_key())
    first = post(gateway, key, "Only once.", "same-key")
    retry = post(gateway, key, "Only once.", "same-key")
    assert retry.duplicate and not first.duplicate
    assert (retry.message_id, retry.input_id) == (first.message_id, first.input_id)
    # The key space is SendChat's too: a send with the key finds the post.
    assert gateway.send(key, "something else", "same-key").duplicate
    assert messages(gateway, key) == welcomed((ASSISTANT, "Only once.", "alice"))


def test_a_post_without_scope_post_is_refused_and_changes_nothing(gateway: Gateway) -> None:
    key = gateway.create(_key())
    with pytest.raises(grpc.RpcError) as refused:
        post(gateway, key, "not allowed", "nope", "chat")
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "scope 'post'" in (refused.value.details() or "")
    assert messages(gateway, key) == welcomed()


@pytest.mark.parametrize(
    ("text", "idem", "says"),
    [
        ("", "k", "text is empty"),
        ("   \n", "k", "text is empty"),
        ("hello", "", "idempotency_key is required"),
        ("hello", "k" * 129, "idempotency_key is required"),
        ("x" * (MAX_BYTES + 1), "k", f"the maximum is {MAX_BYTES} bytes"),
    ],
)
def test_a_bad_post_is_refused_as_invalid_and_changes_nothing(
    gateway: Gateway, text: str, idem: str, says: str
) -> None:
    key = gateway.create(_key())
    with pytest.raises(grpc.RpcError) as refused:
        post(gateway, key, text, idem)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in (refused.value.details() or "")
    assert messages(gateway, key) == welcomed()


def test_a_post_to_another_principals_conversation_is_not_found(gateway: Gateway) -> None:
    key = gateway.create(_key(), principal="bob")
    with pytest.raises(grpc.RpcError) as refused:
        post(gateway, key, "hello", "k")
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND


def test_the_welcome_is_the_first_message_of_a_new_conversation(gateway: Gateway) -> None:
    start = gateway.head()
    key = gateway.create(_key())
    events, _ = gateway.replay(start)
    mine = [e for e in events if e.conversation_key == key]
    assert [e.WhichOneof("payload") for e in mine] == ["conversation_created", "message_appended"]
    assert mine[1].message_appended.posted_by == "welcome"
    history = gateway.history(key).messages
    assert [(m.role, m.text, m.posted_by, m.run_id) for m in history] == [
        (ASSISTANT, WELCOME, "welcome", "")
    ]


def test_the_error_reply_follows_a_failed_run_whose_reason_stays_recorded(
    gateway: Gateway,
) -> None:
    key = gateway.create(_key())
    start = gateway.head()
    failed = gateway.send(key, "fails now", "k1")
    events = gateway.wait_runs_ended(start, {failed.run_id})
    ended = [r for r in payloads(events, "run_changed") if r.id == failed.run_id][-1]
    assert ended.state == common_pb2.RUN_STATE_FAILED
    assert "upstream overloaded" in ended.reason
    events = gateway.wait_for(start, lambda evs: posted(evs, key, "error_reply"))
    kinds = [
        e.WhichOneof("payload")
        for e in events
        if e.conversation_key == key and e.WhichOneof("payload") != "tool_changed"
    ]
    assert kinds[-2:] == ["run_changed", "message_appended"]  # after the failure is recorded
    assert messages(gateway, key) == welcomed(
        (USER, "fails now", ""), (ASSISTANT, ERROR_REPLY, "error_reply")
    )


def test_a_cancelled_run_gets_no_error_reply(gateway: Gateway) -> None:
    key = gateway.create(_key())
    start = gateway.head()
    run = gateway.send(key, "long wait", "k1")
    gateway.wait_for(start, lambda evs: bool(payloads(evs, "tool_changed")))
    gateway.stub.CancelRun(
        mind_pb2.CancelRunRequest(on_behalf_of=gateway.who("alice"), conversation_key=key),
        metadata=gateway.md,
        timeout=15,
    )
    gateway.wait_runs_ended(start, {run.run_id})
    # A later post lands right after the cancelled run: nothing was posted between them.
    post(gateway, key, "after the cancel", "p1")
    assert [posted_by for _, _, posted_by in messages(gateway, key) if posted_by] == [
        "welcome",
        "alice",
    ]


def test_an_empty_model_reply_is_not_stored_and_the_error_reply_stands_for_it(
    gateway: Gateway,
) -> None:
    key = gateway.create(_key())
    start = gateway.head()
    run = gateway.send(key, "says nothing", "k1")
    events = gateway.wait_runs_ended(start, {run.run_id})
    ended = [r for r in payloads(events, "run_changed") if r.id == run.run_id][-1]
    assert ended.state == common_pb2.RUN_STATE_FAILED and "empty reply" in ended.reason
    post(gateway, key, "marker", "p1")  # appended after everything the run wrote
    assert messages(gateway, key) == welcomed(
        (USER, "says nothing", ""),
        (ASSISTANT, ERROR_REPLY, "error_reply"),
        (ASSISTANT, "marker", "alice"),
    )


def test_an_empty_last_reply_after_a_visible_one_is_dropped_and_the_run_completes(
    gateway: Gateway,
) -> None:
    key = gateway.create(_key())
    start = gateway.head()
    run = gateway.send(key, "checks then says nothing", "k1")
    events = gateway.wait_runs_ended(start, {run.run_id})
    ended = [r for r in payloads(events, "run_changed") if r.id == run.run_id][-1]
    assert ended.state == common_pb2.RUN_STATE_COMPLETED and "empty" in ended.reason
    assistant = [(text, by) for role, text, by in messages(gateway, key) if role == ASSISTANT]
    assert assistant == [(WELCOME, "welcome"), ("checking", "")]


def test_a_post_retried_after_a_kill_9_appears_once(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script) as mind:
        gateway = Gateway.connect(mind)
        try:
            key = gateway.create(_key())
            first = post(gateway, key, "Exactly once.", "crash-key")
        finally:
            gateway.close()
        mind.restart()
        gateway = Gateway.connect(mind)
        try:
            retry = post(gateway, key, "Exactly once.", "crash-key")
            assert retry.duplicate
            assert (retry.message_id, retry.input_id) == (first.message_id, first.input_id)
            assert messages(gateway, key) == [(ASSISTANT, "Exactly once.", "alice")]
        finally:
            gateway.close()


def test_a_post_queued_behind_a_run_survives_a_kill_9_and_is_delivered_once(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(tmp_path, script=script) as mind:
        gateway = Gateway.connect(mind)
        try:
            key = gateway.create(_key())
            start = gateway.head()
            run = gateway.send(key, "long wait", "k1")
            gateway.wait_for(start, lambda evs: bool(payloads(evs, "tool_changed")))
            first = post(gateway, key, "Waiting its turn.", "queued-key")
            assert first.queued
        finally:
            gateway.close()
        mind.restart()
        gateway = Gateway.connect(mind)
        try:
            retry = post(gateway, key, "Waiting its turn.", "queued-key")
            assert retry.duplicate and retry.input_id == first.input_id

            gateway.wait_for(start, lambda evs: posted(evs, key, "alice"))
            said = [m for m in messages(gateway, key) if m[0] != common_pb2.MESSAGE_ROLE_TOOL]
            assert said == [
                (USER, "long wait", ""),
                (ASSISTANT, "", ""),
                (ASSISTANT, "Waiting its turn.", "alice"),
            ]
            assert run.run_id in ended_runs(gateway.replay(start)[0])
            assert post(gateway, key, "Waiting its turn.", "queued-key").message_id > 0
        finally:
            gateway.close()
