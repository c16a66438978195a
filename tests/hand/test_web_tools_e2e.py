"""End to end: a real Mind (scripted model) and `tobe hand serve` with its web tools, against a
local site: web_fetch reads a real page, the guard refuses the metadata address, web_search
asks a fake SearXNG, and the browser reads a form freely but types into it only once a person
approved."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.mind_process import MindProcess, issue_token, running_mind
from web_site import Site, serving

from hand.web.browser import chromium_path
from tests.remote.remote_processes import Chat, HandProcess, approval_requested, run_ended
from tobe.v1 import common_pb2, events_pb2

pytestmark = pytest.mark.e2e

SCRIPT = """
runs:
  - match: "^read"
    steps:
      - tool_calls:
          - {name: laptop__web_fetch, arguments: {url: "SITE/pages/rustdoc-what-is-rustdoc.html"}}
      - expect: {last_role: tool, last_contains: "ships with a tool called"}
        text: "Read."
  - match: "^metadata"
    steps:
      - tool_calls:
          - {name: laptop__web_fetch, arguments: {url: "http://169.254.169.254/latest/meta-data/"}}
      - expect: {last_role: tool, last_is_error: true, last_contains: "refused 169.254.169.254"}
        text: "Refused."
  - match: "^search"
    steps:
      - tool_calls: [{name: laptop__web_search, arguments: {query: "rust option", count: 2}}]
      - expect: {last_role: tool, last_contains: "std::option - Rust"}
        text: "Found."
  - match: "^order"
    steps:
      - tool_calls: [{name: laptop__browser_open, arguments: {url: "SITE/form"}}]
      - expect: {last_role: tool, last_contains: "textbox"}
        tool_calls:
          - name: laptop__browser_type
            arguments: {element: "the name field", ref: "e9", text: "Ada", submit: true}
      - text: "Ordered."
"""


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serving("127.0.0.1") as running:
        yield running


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory, site: Site) -> Iterator[MindProcess]:
    base = tmp_path_factory.mktemp("mind")
    script = base / "script.yaml"
    script.write_text(SCRIPT.replace("SITE", site.url("")))
    with running_mind(base, script=script, clients=()) as process:
        yield process


@pytest.fixture(scope="module")
def hand(
    mind: MindProcess, site: Site, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HandProcess]:
    workspace = tmp_path_factory.mktemp("hand") / "workspace"
    workspace.mkdir()
    token = issue_token(mind.url, kind="hand", principal="laptop", scopes=["serve:alice"])
    args = ["--web-allow", "127.0.0.1", "--search-url", site.url("/")]
    if chromium_path("chromium") is not None:
        args.append("--browser")
    process = HandProcess(mind.address, token, workspace, extra_args=args)
    process.start()
    try:
        process.wait_attached(timeout=60)
        yield process
    finally:
        process.kill()


def _run(mind: MindProcess, key: str, text: str) -> list[events_pb2.Event]:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        return chat.turn(key, text)
    finally:
        chat.close()


def _tool_messages(events: list[events_pb2.Event]) -> list[common_pb2.Message]:
    return [
        e.message_appended
        for e in events
        if e.WhichOneof("payload") == "message_appended"
        and e.message_appended.role == common_pb2.MESSAGE_ROLE_TOOL
    ]


def _completed(events: list[events_pb2.Event]) -> bool:
    return events[-1].run_changed.state == common_pb2.RUN_STATE_COMPLETED


def test_the_hand_says_which_web_tools_it_offers(hand: HandProcess) -> None:
    hand.wait_output("web tools: ")
    line = next(line for line in hand.output if "web tools: " in line)
    assert "web_fetch" in line and "web_search" in line


def test_web_fetch_reads_a_real_page_through_the_mind(
    mind: MindProcess, hand: HandProcess, site: Site
) -> None:
    events = _run(mind, "p_read", "read the rustdoc page")
    (message,) = _tool_messages(events)
    assert "Title: What is rustdoc? - The rustdoc book" in message.text
    assert "ships with a tool called `rustdoc`" in message.text
    assert "Keyboard shortcuts" not in message.text
    assert _completed(events)


def test_the_guard_refuses_the_metadata_address_through_the_mind(
    mind: MindProcess, hand: HandProcess
) -> None:
    events = _run(mind, "p_metadata", "metadata please")
    (message,) = _tool_messages(events)
    assert "the address is link-local (the cloud metadata service)" in message.text
    assert _completed(events)


def test_web_search_asks_searxng_through_the_mind(
    mind: MindProcess, hand: HandProcess, site: Site
) -> None:
    events = _run(mind, "p_search", "search for it")
    (message,) = _tool_messages(events)
    assert "1. std::option - Rust" in message.text
    assert {"q": ["rust option"], "format": ["json"]} in site.search_queries
    assert _completed(events)


@pytest.mark.skipif(chromium_path("chromium") is None, reason="Chromium is not installed")
def test_the_browser_reads_freely_and_types_only_once_approved(
    mind: MindProcess, hand: HandProcess, site: Site
) -> None:
    chat = Chat(mind.address, mind.gateway_metadata)
    try:
        chat.create("p_order")
        sent = chat.send("p_order", "order a book", "p_order")
        requested = chat.events_until(approval_requested)
        (approval,) = [
            e.approval_changed for e in requested if e.WhichOneof("payload") == "approval_changed"
        ]
        assert approval.tool == "laptop__browser_type"
        assert approval.decision_text == "type Ada into the name field (e9)"
        assert [m for m in site.requests if m[0] == "POST"] == []
        chat.approve(approval.id)
        events = chat.events_until(run_ended(sent.run_id))
    finally:
        chat.close()
    opened, typed = _tool_messages([e for e in events if e.conversation_key == "p_order"])
    assert 'textbox "Your name" [ref=e9]' in opened.text
    assert 'heading "Thank you, Ada"' in typed.text
    assert ("POST", "/order") in site.requests
