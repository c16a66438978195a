"""A `delegate` call's nested card in the web client, in a real Chromium at desktop and phone
sizes, against a real Mind (Scripted provider), Face and Hand: the child's tool call appears
under the parent's card as it runs, its approval is asked in the parent's view (labelled as a
sub-agent's) and decided there, the child's answer shows in the card, axe finds nothing
serious, and a reload rebuilds the card from the snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from test_web_accessibility_e2e import SIZES, blocking_violations
from web_stack import Stack, running_stack
from web_steps import new_conversation, send, sign_in

pytestmark = pytest.mark.e2e

SCRIPT = """
runs:
  - match: "^delegate the note"
    steps:
      - tool_calls:
          - name: delegate
            arguments: {task: "child: save the note"}
      - {expect: {last_contains: "Saved by the child."}, text: "The sub-agent **saved** it."}
  - match: "^child: save the note"
    steps:
      - text: "Saving the note now."
        tool_calls:
          - name: laptop__save_note
            arguments: {name: "child.txt", text: "from the child"}
      - {expect: {last_role: tool}, text: "Saved by the child."}
  - match: ".*"
    steps:
      - {text: "Nothing to do."}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("delegate"), script_text=SCRIPT) as started:
        yield started


@pytest.fixture(params=list(SIZES))
def sized(request: pytest.FixtureRequest, new_context: Callable[..., BrowserContext]) -> Page:
    return new_context(**SIZES[str(request.param)]).new_page()


def test_a_childs_calls_and_approval_show_nested_under_the_delegate_card_and_survive_a_reload(
    sized: Page, stack: Stack
) -> None:
    page = sized
    sign_in(page, stack)
    new_conversation(page, "delegate")
    send(page, "delegate the note")

    delegate = page.locator("details.tool", has_text="delegate")
    nested = page.locator(".child-card")
    expect(nested).to_be_visible()
    call = nested.locator(".child-call")
    expect(call.locator(".tool-name")).to_have_text("laptop__save_note")
    # The child's request, asked where the person watches the parent, labelled as the child's.
    approval = page.locator("section.approval")
    expect(approval.locator(".delegated")).to_have_text(
        "Asked by a sub-agent this conversation started"
    )
    expect(approval.locator("h3")).to_have_text("Approval needed: laptop__save_note on laptop")
    expect(delegate).to_have_attribute("data-state", "waiting")
    expect(call).to_have_attribute("data-state", "waiting")
    expect(call.locator(".tool-state")).to_have_text("waiting for your approval")
    expect(nested.locator(".child-text")).to_have_text("› Saving the note now.")
    assert blocking_violations(page, stack) == []

    approval.get_by_role("button", name="Approve once").click()
    expect(page.locator("#log article.assistant").last).to_contain_text("The sub-agent saved it.")
    expect(delegate).to_have_attribute("data-state", "succeeded")
    expect(call).to_have_attribute("data-state", "succeeded")
    expect(nested.locator(".child-text")).to_have_text("› Saved by the child.")
    expect(nested.locator("summary")).to_have_text("Sub-agent: 1 tool call")
    assert "child.txt" in stack.hand.saved

    # Collapsible, and drawn again from the snapshot after a reload.
    nested.locator("summary").click()
    expect(nested.locator(".child-calls")).to_be_hidden()
    page.reload()
    expect(page.locator("#message")).to_be_enabled()
    expect(nested.locator(".child-call")).to_have_attribute("data-state", "succeeded")
    expect(nested.locator(".child-call .tool-name")).to_have_text("laptop__save_note")
    expect(nested.locator(".child-text")).to_have_text("› Saved by the child.")
    assert blocking_violations(page, stack) == []
