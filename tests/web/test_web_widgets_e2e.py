"""Widgets end to end (issue 39's acceptance): real Mind, Face and web client with the Scripted
provider. The operator puts a type with `tobe admin widget-types put`; the model creates a
widget, writes records (one refused by the schema, one for a stale revision: it is told only
the generic failure), sets the presentation and sends it. The web client shows the card after
the reply (reached by Tab, no serious axe finding); opening it shows the type's page, sandboxed,
rendering the records, and a later write updates the open page. `tobe chat` gets the card in
order with the reply from the Face's stream, as one line, and `/widget` prints the records."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pexpect
import pytest
from playwright.sync_api import BrowserContext, Frame, Page, expect
from test_web_accessibility_e2e import blocking_violations, tab_through
from web_stack import Stack, running_stack
from web_steps import new_conversation, send, sign_in

from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e
VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
INVALID = "request failed (400); read the current state before trying again"
STALE = "request failed (409); read the current state before trying again"
PROMPT = "you› "
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

TRIP = json.dumps(
    {
        "modules": {
            "stops": {
                "description": "One stop of the trip, in visiting order.",
                "schema": {
                    "type": "object",
                    "properties": {"place": {"type": "string"}, "nights": {"type": "integer"}},
                    "required": ["place"],
                    "additionalProperties": False,
                },
            }
        }
    }
)
# A type author's page: renders the stops it is sent, and tells what it can reach.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Trip</title>
<style>li { font: 16px sans-serif; }</style></head>
<body><h1 id="title"></h1><ul id="stops"></ul>
<script>
addEventListener("message", (received) => {
  if (!received.data || received.data.type !== "tobe.widget") return;
  const widget = received.data.widget;
  document.getElementById("title").textContent = widget.title;
  document.getElementById("stops").replaceChildren(...widget.modules.stops.records.map((r) => {
    const item = document.createElement("li");
    item.textContent = `${r.data.place} (${r.data.nights} nights)`;
    return item;
  }));
});
parent.postMessage({ type: "tobe.widget.ready" }, "*");
</script></body></html>
"""


def _call(name: str, **arguments: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def _on_widget(name: str, **arguments: object) -> dict[str, Any]:
    """A call on the widget whose id the last message (a tool result, or the person's JSON)
    names."""
    return {**_call(name, **arguments), "arguments_from_last": {"widget_id": "widget_id"}}


def _after(text: str) -> dict[str, Any]:
    return {"last_role": "tool", "last_contains": text}


RUNS = [
    {
        "match": "^plan",
        "steps": [
            {"tool_calls": [_call("widget_create", type="trip", title="Rome in May")]},
            {
                "expect": _after('"title":"Rome in May"'),
                "tool_calls": [
                    _on_widget(
                        "widget_write",
                        module="stops",
                        record_id="r1",
                        data={"place": "Rome", "nights": 3},
                        expected_revision=0,
                    )
                ],
            },
            {
                "expect": _after('"record_id":"r1"'),
                "tool_calls": [
                    _on_widget("widget_write", module="stops", record_id="r2", data={"place": 7}),
                    _on_widget(
                        "widget_write",
                        module="stops",
                        record_id="r1",
                        data={"place": "Milan"},
                        expected_revision=0,
                    ),
                    _on_widget("widget_read"),
                ],
            },
            {
                "expect": _after('"revision":1'),
                "tool_calls": [_on_widget("widget_send", summary="Three nights in Rome")],
            },
            {"expect": _after('"sent":'), "text": "Here is your trip."},
        ],
    },
    {
        # The person's message is JSON naming the widget, so the write can take its id.
        "match": '^\\{"add"',
        "steps": [
            {
                "tool_calls": [
                    _on_widget(
                        "widget_write",
                        module="stops",
                        record_id="r2",
                        data={"place": "Florence", "nights": 2},
                        expected_revision=0,
                    )
                ]
            },
            # The reply waits, so Esc in the open widget comes while the run goes on.
            {"expect": _after('"record_id":"r2"'), "delay": 3, "text": "Florence added."},
        ],
    },
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("widgets")
    with running_stack(
        root,
        script_text=json.dumps({"runs": RUNS}),  # JSON is YAML
        clients=("alice",),
        TOBE_APPROVALS__WORKSPACE_WRITE="allow",
    ) as started:
        schema, page = root / "trip.json", root / "trip.html"
        schema.write_text(TRIP, encoding="utf-8")
        page.write_text(PAGE, encoding="utf-8")
        started.admin("widget-types", "put", "trip", "--schema", str(schema), "--page", str(page))
        yield started


def _widget_frame(page: Page) -> Frame:
    frame = page.frame(url=lambda url: url.endswith("/widget-frame.html"))
    assert frame is not None
    return frame


def _model_saw(stack: Stack, key: str) -> list[str]:
    messages = stack.history(key).messages
    return [m.text for m in messages if m.role == common_pb2.MESSAGE_ROLE_TOOL and m.is_error]


@pytest.mark.parametrize("size", VIEWPORTS)
def test_a_sent_widget_shows_as_a_card_whose_page_renders_its_records_and_follows_writes(
    stack: Stack, new_context: Callable[..., BrowserContext], size: str
) -> None:
    page = new_context(viewport=VIEWPORTS[size]).new_page()
    sign_in(page, stack)
    key = new_conversation(page, "trip")

    send(page, "plan my trip")

    card = page.locator("#log button.widget-card")
    expect(card).to_be_visible()
    expect(card.locator(".widget-title")).to_have_text("Rome in May")
    expect(card.locator(".widget-type")).to_have_text("trip")
    expect(card.locator(".widget-summary")).to_have_text("Three nights in Rome")
    # The card follows the run's reply in the transcript.
    shown = page.locator("#log article.msg.assistant:not([hidden])")
    expect(shown).to_have_count(2)
    expect(shown.nth(0)).to_contain_text("Here is your trip.")
    expect(shown.nth(1).locator("button.widget-card")).to_have_count(1)
    assert _model_saw(stack, key) == [f"error: {INVALID}", f"error: {STALE}"]
    # The card is reached by Tab, shows the focus, and passes axe.
    reached = tab_through(page)
    assert [ring for name, ring in reached.items() if name.startswith("Rome in May")] == [True]
    assert blocking_violations(page, stack) == []

    card.focus()
    page.keyboard.press("Enter")
    viewer = page.locator("#widget-viewer")
    expect(viewer).to_be_visible()
    expect(viewer.locator("#widget-heading")).to_have_text("Rome in May")
    iframe = viewer.locator("iframe.widget-frame")
    assert iframe.get_attribute("sandbox") == "allow-scripts"
    inside = page.frame_locator("#widget-viewer iframe.widget-frame")
    expect(inside.locator("#title")).to_have_text("Rome in May")
    expect(inside.locator("#stops li")).to_have_text(["Rome (3 nights)"])
    assert blocking_violations(page, stack) == []

    # The page runs in an opaque origin under its own CSP: no way into the app, no network.
    frame = _widget_frame(page)
    assert frame.evaluate("() => self.origin") == "null"
    reach = "() => { try { return parent.document.title; } catch { return 'blocked'; } }"
    assert frame.evaluate(reach) == "blocked"
    fetched = "() => fetch('/api/session').then(() => 'reached', () => 'blocked')"
    assert frame.evaluate(fetched) == "blocked"

    widget_id = card.get_attribute("data-widget-id")
    stack.say(key, json.dumps({"add": "Florence", "widget_id": widget_id}))

    expect(inside.locator("#stops li")).to_have_text(["Rome (3 nights)", "Florence (2 nights)"])
    # Esc closes the widget; it does not stop the run behind it.
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()
    expect(card).to_be_focused()
    expect(page.locator("#log article.msg.assistant").last).to_contain_text("Florence added.")


def test_tobe_chat_prints_the_card_after_the_reply_and_the_records_on_request(
    stack: Stack,
) -> None:
    chat = pexpect.spawn(
        sys.executable,
        ["-m", "tobe", "chat", "--address", stack.face.address],
        env={
            **stack.face.env,
            "TOBE_CHAT_TOKEN": stack.mind.client_tokens["alice"],
            "TERM": "xterm",
        },
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    chat.logfile_read = io.StringIO()
    try:
        chat.expect(PROMPT)
        chat.sendline("/new chat trip")
        chat.expect(PROMPT)
        chat.sendline("plan my trip")
        chat.expect(r"/widget (w_[0-9a-f]+) to show")
        widget_id = chat.match.group(1)
        chat.expect(PROMPT)
        chat.sendline(f"/widget {widget_id}")
        chat.expect("Florence|Rome")
        chat.expect(PROMPT)
        chat.sendline("/quit")
        chat.expect(pexpect.EOF)
    finally:
        chat.close(force=True)
    printed = ANSI.sub("", chat.logfile_read.getvalue())
    card = (
        f"▣ Rome in May — trip · Three nights in Rome (widget {widget_id}; "
        f"/widget {widget_id} to show)"
    )
    assert printed.index("Here is your trip.") < printed.index(card)
    rows = [" ".join(line.replace("│", " ").split()) for line in printed.splitlines()]
    assert "r1 1 Rome 3" in rows
