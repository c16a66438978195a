"""Renaming, archiving and searching conversations through a real Mind.

A rename is for those who may write to the conversation (owner and members), an archiving for
its owner; both commit with a `conversation_changed` event. Bad titles are refused with
INVALID_ARGUMENT and change nothing. An archived conversation leaves the default list and stays
readable and searchable. A search finds a conversation by its title or by a word said in it,
with a snippet, and never one the caller cannot read; what was said is found once the recall
indexer, which runs beside the turns, has caught up.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import grpc
import pytest
from helpers.eventually import eventually
from helpers.mind_gateway import Gateway
from helpers.mind_process import MindProcess, running_mind

from tobe.v1 import events_pb2, mind_pb2

pytestmark = pytest.mark.e2e

SCRIPT = """
runs:
  - match: ".*"
    steps:
      - {text: "The capybara is the largest living rodent."}
"""


def _key(prefix: str = "p") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    root = tmp_path_factory.mktemp("changes-mind")
    script = root / "script.yaml"
    script.write_text(SCRIPT)
    with running_mind(root, script=script, clients=("alice", "bob", "carol")) as process:
        yield process


@pytest.fixture
def gateway(mind: MindProcess) -> Iterator[Gateway]:
    client = Gateway.connect(mind)
    try:
        yield client
    finally:
        client.close()


def rename(
    gateway: Gateway, key: str, title: str, principal: str = "alice"
) -> mind_pb2.Conversation:
    request = mind_pb2.RenameConversationRequest(
        on_behalf_of=gateway.who(principal), conversation_key=key, title=title
    )
    return gateway.stub.RenameConversation(request, metadata=gateway.md, timeout=10).conversation


def archive(
    gateway: Gateway, key: str, archived: bool = True, principal: str = "alice"
) -> mind_pb2.Conversation:
    request = mind_pb2.ArchiveConversationRequest(
        on_behalf_of=gateway.who(principal), conversation_key=key, archived=archived
    )
    return gateway.stub.ArchiveConversation(request, metadata=gateway.md, timeout=10).conversation


def listed(
    gateway: Gateway, principal: str = "alice", *, include_archived: bool = False
) -> list[str]:
    request = mind_pb2.ListConversationsRequest(
        on_behalf_of=gateway.who(principal), include_archived=include_archived
    )
    reply = gateway.stub.ListConversations(request, metadata=gateway.md, timeout=10)
    return [c.key for c in reply.conversations]


def search(
    gateway: Gateway, query: str, principal: str = "alice"
) -> list[mind_pb2.ConversationMatch]:
    request = mind_pb2.SearchConversationsRequest(on_behalf_of=gateway.who(principal), query=query)
    return list(gateway.stub.SearchConversations(request, metadata=gateway.md, timeout=10).matches)


def refusal(call) -> grpc.RpcError:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value


def changes(events: list[events_pb2.Event], key: str) -> list[events_pb2.Event]:
    return [e for e in events if e.conversation_key == key and e.HasField("conversation_changed")]


def said(gateway: Gateway, key: str, text: str) -> None:
    """Send `text` and wait until its run ended."""
    start = gateway.head()
    run = gateway.send(key, text, uuid.uuid4().hex).run_id
    gateway.wait_runs_ended(start, {run})


def test_a_rename_is_committed_trimmed_and_announced_to_owner_and_members(gateway: Gateway) -> None:
    key = gateway.create(_key("g"), members=("bob",))
    start = gateway.head()
    assert rename(gateway, key, "  Trip to Lisbon  ").title == "Trip to Lisbon"
    assert rename(gateway, key, "Trip to Porto", principal="bob").title == "Trip to Porto"
    events = changes(gateway.wait_for(start, lambda evs: len(changes(evs, key)) == 2), key)
    assert [e.conversation_changed.title for e in events] == ["Trip to Lisbon", "Trip to Porto"]
    assert set(events[-1].audience) == {"alice", "bob"}
    assert gateway.snapshot(key, principal="bob").conversation.title == "Trip to Porto"


@pytest.mark.parametrize(
    ("title", "says"),
    [
        ("   ", "title is empty"),
        ("x" * 201, "title is 201 characters; the maximum is 200"),
        ("two\nlines", "control character"),
        ("tab\there", "control character"),
    ],
)
def test_a_bad_title_is_refused_with_one_clear_line_and_changes_nothing(
    gateway: Gateway, title: str, says: str
) -> None:
    key = gateway.create(_key())
    rename(gateway, key, "Kept")
    error = refusal(lambda: rename(gateway, key, title))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in error.details() and "\n" not in error.details()
    assert gateway.snapshot(key).conversation.title == "Kept"


def test_nobody_else_can_rename_or_archive_and_members_cannot_archive(gateway: Gateway) -> None:
    key = gateway.create(_key("g"), members=("bob",))
    rename(gateway, key, "Ours")
    assert (
        refusal(lambda: rename(gateway, key, "Mine", "carol")).code() == grpc.StatusCode.NOT_FOUND
    )
    assert (
        refusal(lambda: archive(gateway, key, principal="carol")).code()
        == grpc.StatusCode.NOT_FOUND
    )
    denied = refusal(lambda: archive(gateway, key, principal="bob"))
    assert denied.code() == grpc.StatusCode.PERMISSION_DENIED
    conversation = gateway.snapshot(key).conversation
    assert conversation.title == "Ours" and not conversation.archived


def test_an_archived_conversation_leaves_the_list_stays_readable_and_comes_back(
    gateway: Gateway,
) -> None:
    key = gateway.create(_key("g"), members=("bob",))
    start = gateway.head()
    assert archive(gateway, key).archived
    assert key not in listed(gateway) and key not in listed(gateway, "bob")
    assert key in listed(gateway, include_archived=True)
    assert key in listed(gateway, "bob", include_archived=True)
    said(gateway, key, "still here?")  # readable and writable; sending keeps it archived
    assert gateway.snapshot(key).conversation.archived
    assert gateway.history(key).messages[-1].text == "The capybara is the largest living rodent."
    assert key not in listed(gateway)
    assert not archive(gateway, key, archived=False).archived
    assert key in listed(gateway) and key in listed(gateway, "bob")
    events = changes(gateway.wait_for(start, lambda evs: len(changes(evs, key)) == 2), key)
    assert [e.conversation_changed.archived for e in events] == [True, False]


def test_search_finds_a_word_said_only_in_a_message_with_a_snippet_and_archived_ones_too(
    gateway: Gateway,
) -> None:
    key = gateway.create(_key())
    rename(gateway, key, "Animals")
    said(gateway, key, "tell me about quokkas-and-wombats please")
    archive(gateway, key)
    [match] = eventually(
        lambda: [m for m in search(gateway, "QUOKKAS-AND") if m.conversation.key == key],
        what="the message found",
    )
    assert not match.in_title and match.message_id > 0
    assert "quokkas-and-wombats" in match.snippet
    replied = eventually(
        lambda: [m for m in search(gateway, "largest living") if m.conversation.key == key],
        what="the reply found",
    )
    assert replied and "capybara" in replied[0].snippet  # the model's reply is searched too
    titled = [m for m in search(gateway, "animals") if m.conversation.key == key]
    assert titled and titled[0].in_title


def test_search_never_shows_another_persons_conversation_or_snippet(gateway: Gateway) -> None:
    secret = f"zebra{uuid.uuid4().hex[:8]}"
    key = gateway.create(_key())
    rename(gateway, key, f"Alice's {secret}")
    said(gateway, key, f"my {secret} diary")
    eventually(
        lambda: [m.conversation.key for m in search(gateway, secret)],
        until=lambda keys: keys == [key] and "diary" in search(gateway, secret)[0].snippet,
        what="alice's conversation found by its message",
    )
    assert search(gateway, secret, principal="bob") == []
    shared = gateway.create(_key("g"), members=("bob",))
    said(gateway, shared, f"our {secret} plans")
    found = eventually(
        lambda: search(gateway, secret, principal="bob"),
        until=lambda matches: matches and matches[0].snippet,
        what="the shared conversation found by its message",
    )
    assert [m.conversation.key for m in found] == [shared]
    assert "diary" not in found[0].snippet


def test_search_takes_wildcards_literally_and_refuses_an_empty_query(gateway: Gateway) -> None:
    key = gateway.create(_key())
    rename(gateway, key, "100% sure_thing")
    assert key in [m.conversation.key for m in search(gateway, "100% sure_")]
    assert key not in [m.conversation.key for m in search(gateway, "1_0%")]
    error = refusal(lambda: search(gateway, "  "))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "query is empty" in error.details()
    too_long = refusal(lambda: search(gateway, "y" * 201))
    assert too_long.code() == grpc.StatusCode.INVALID_ARGUMENT
