"""The conversation details panel in a real headless Chromium against a real Mind, Face and
Hand: switching the profile, a memory entry written by the model shown and deleted, the
conversation's token usage, scheduled actions paused, resumed and deleted — each checked
against the Mind — and the panel on a phone-sized screen, by keyboard."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from web_stack import PRINCIPAL, Stack, running_stack
from web_steps import send, sign_in

from mind.events.action_views import PlanStepView, TriggerKind, TriggerView
from mind.scheduler.records import create_schedule
from mind.store import models
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from tobe.v1 import common_pb2

pytestmark = pytest.mark.e2e

PLANS = "p_plans"
# 2030-01-15 08:00 UTC: 03:00 in New York, the zone the browser is put in.
CALL_AT = datetime(2030, 1, 15, 8, 0, tzinfo=UTC)
BROWSER_ZONE = {"timezone_id": "America/New_York", "locale": "en-US"}


def seed_plans(url: str) -> None:
    """Alice's conversation `plans` with two scheduled actions: every 2 h, and once in 2030."""

    async def seed() -> None:
        database = Database.open(url)
        try:

            def conversation(tx: WriteTx) -> None:
                tx.session.add(models.Conversation(key=PLANS, owner=PRINCIPAL, title="plans"))

            await database.write(conversation)
            triggers = {
                "Water the plants": TriggerView(
                    TriggerKind.INTERVAL, "Europe/Paris", every_seconds=7200
                ),
                "Call mum": TriggerView(TriggerKind.AT, "Europe/Paris", at=CALL_AT),
            }
            for title, trigger in triggers.items():
                await database.write(
                    lambda tx, title=title, trigger=trigger: create_schedule(
                        tx,
                        conversation_key=PLANS,
                        owner=PRINCIPAL,
                        audience=[PRINCIPAL],
                        title=title,
                        goal=f"remind alice: {title}",
                        plan=(PlanStepView(1, "send_message", "say it"),),
                        trigger=trigger,
                        source="seed",
                        now=datetime.now(UTC),
                    )
                )
        finally:
            await database.close()

    asyncio.run(seed())


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The web stack, its store seeded with the `plans` conversation and its actions."""
    with running_stack(tmp_path_factory.mktemp("details"), seed=seed_plans) as started:
        yield started


def open_details(page: Page) -> None:
    page.get_by_role("button", name="Details").click()
    expect(page.locator("#details")).to_be_visible()
    expect(page.locator("#close-details")).to_be_focused()


def show_plans(page: Page) -> None:
    """Open the seeded `plans` conversation from the list and wait until it is shown."""
    toggle = page.locator("#toggle-list")
    if toggle.is_visible():  # a narrow screen: the list opens over the conversation
        toggle.click()
    page.locator(f'#conversations button[data-key="{PLANS}"]').click()
    expect(page.locator("#conversation-title")).to_have_text("plans")
    # Shown once the composer has the focus back (after the snapshot).
    expect(page.locator("#message")).to_be_focused()


def conversation_key(page: Page) -> str:
    key = page.locator("#conversations button[aria-current=true]").get_attribute("data-key")
    assert key
    return key


def test_switching_the_profile_in_the_panel_changes_the_conversations_profile(
    page: Page, stack: Stack
) -> None:
    key = conversation_key(page)
    open_details(page)
    select = page.locator("#profile-select")
    expect(select).to_have_value("default")
    expect(select.locator("option")).to_have_text(["default", "coach", "broken"])
    switch = page.get_by_role("button", name="Switch")
    expect(switch).to_be_disabled()
    # Choosing alone changes nothing: arrow keys on a closed selector choose at every step.
    select.focus()
    page.keyboard.press("ArrowDown")
    expect(switch).to_be_enabled()
    assert stack.snapshot(key).conversation.profile in ("", "default")
    # A profile that cannot run is refused, saying why, and the choice goes back.
    select.select_option("broken")
    switch.click()
    error = page.locator("#profile-error")
    expect(error).to_contain_text("no_such_tool")
    expect(select).to_have_value("default")
    assert stack.snapshot(key).conversation.profile in ("", "default")
    select.select_option("coach")
    switch.click()
    expect(page.locator("#profile-note")).to_contain_text("a running coach")
    expect(select).to_be_enabled()
    expect(select).to_have_value("coach")
    assert stack.snapshot(key).conversation.profile == "coach"
    expect(page.locator("#profile-error")).to_be_hidden()


def test_a_memory_entry_the_model_writes_shows_as_text_and_deleting_it_forgets_it(
    page: Page, stack: Stack
) -> None:
    key = conversation_key(page)
    open_details(page)
    memory = page.locator("#memory-list")
    expect(memory).to_have_text("Nothing remembered")
    send(page, "remember my diet")
    # Shown live, from the memory_changed event, with the model's markup as text.
    entry = memory.locator('li[data-memory-key="diet"]')
    expect(entry.locator(".entry-text")).to_have_text("no peanuts <b>ever</b>")
    assert entry.locator("b").count() == 0
    assert stack.memory(key) == {"diet": "no peanuts <b>ever</b>"}
    entry.get_by_role("button", name="Delete memory diet").click()
    # The confirm step: Keep goes back and deletes nothing.
    entry.get_by_role("button", name="Keep").click()
    expect(entry.get_by_role("button", name="Delete memory diet")).to_be_focused()
    assert stack.memory(key) == {"diet": "no peanuts <b>ever</b>"}
    entry.get_by_role("button", name="Delete memory diet").click()
    entry.get_by_role("button", name="Yes, delete").click()
    expect(entry).to_have_count(0)
    expect(memory).to_have_text("Nothing remembered")
    assert stack.memory(key) == {}


def test_the_panel_shows_the_conversations_token_usage_and_follows_each_run(
    page: Page, stack: Stack
) -> None:
    key = conversation_key(page)
    open_details(page)
    summary = page.locator("#usage-summary")
    expect(summary).to_have_text("No model requests yet")
    send(page, "hello there")
    # Read again as the run ends: the Mind's own totals, and no price for the scripted model.
    expect(summary).to_contain_text("cost unknown (no price for this model)")
    total = stack.usage(key).total
    assert total.requests == 1 and total.output_tokens > 0
    expect(summary).to_contain_text(
        f"{total.input_tokens:,} tokens in · {total.output_tokens:,} out"
    )
    expect(page.locator('#usage-list li[data-purpose="turn"]')).to_contain_text("1 request,")
    send(page, "and again")
    expect(page.locator('#usage-list li[data-purpose="turn"]')).to_contain_text("2 requests,")
    expect(page.locator("#usage-error")).to_be_hidden()


def test_scheduled_actions_are_paused_resumed_and_deleted_from_the_panel(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    context = new_context(**BROWSER_ZONE)
    page = context.new_page()
    sign_in(page, stack)
    show_plans(page)
    open_details(page)
    # Another tab of the same browser follows the changes live.
    other = context.new_page()
    other.goto(stack.base_url)
    expect(other.locator("#message")).to_be_enabled()
    show_plans(other)
    open_details(other)

    ids = {action.title: action.id for action in stack.snapshot(PLANS).scheduled_actions}
    water = page.locator(f'li[data-schedule-id="{ids["Water the plants"]}"]')
    call = page.locator(f'li[data-schedule-id="{ids["Call mum"]}"]')
    expect(water.locator(".trigger")).to_have_text("every 2 h")
    expect(water.locator(".badge")).to_have_text("active")
    expect(water.locator(".next")).to_contain_text("next ")
    # An instant in the browser's local time.
    expect(call.locator(".trigger")).to_have_text("at Jan 15, 2030, 3:00 AM")
    expect(call.locator(".next")).to_have_text("next Jan 15, 2030, 3:00 AM")

    water.get_by_role("button", name="Pause Water the plants").click()
    expect(water.locator(".badge")).to_have_text("paused")
    assert stack.schedules(PLANS)[ids["Water the plants"]] == common_pb2.SCHEDULE_STATE_PAUSED
    other_water = other.locator(f'li[data-schedule-id="{ids["Water the plants"]}"]')
    expect(other_water.locator(".badge")).to_have_text("paused")

    water.get_by_role("button", name="Resume Water the plants").click()
    expect(water.locator(".badge")).to_have_text("active")
    assert stack.schedules(PLANS)[ids["Water the plants"]] == common_pb2.SCHEDULE_STATE_ACTIVE
    expect(other_water.locator(".badge")).to_have_text("active")

    call.get_by_role("button", name="Delete Call mum").click()
    call.get_by_role("button", name="Yes, delete").click()
    expect(call).to_have_count(0)
    assert stack.schedules(PLANS)[ids["Call mum"]] == common_pb2.SCHEDULE_STATE_DELETED
    expect(other.locator(f'li[data-schedule-id="{ids["Call mum"]}"]')).to_have_count(0)
    expect(page.locator("#schedule-list li.entry")).to_have_count(1)


def test_the_panel_is_a_full_width_sheet_on_a_phone_and_esc_closes_it(
    new_context: Callable[..., BrowserContext], stack: Stack
) -> None:
    page = new_context(viewport={"width": 375, "height": 740}, is_mobile=True).new_page()
    sign_in(page, stack)
    show_plans(page)
    # By keyboard: the toggle opens it and moves focus into it.
    page.locator("#toggle-details").focus()
    page.keyboard.press("Enter")
    panel = page.locator("#details")
    expect(panel).to_be_visible()
    expect(page.locator("#close-details")).to_be_focused()
    expect(page.locator("#schedule-list li.entry").first).to_be_visible()
    box = panel.bounding_box()
    assert box is not None and box["x"] == 0 and box["width"] == 375
    assert not page.evaluate(
        "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"
    )
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(page.locator("#toggle-details")).to_be_focused()
    expect(page.locator("#toggle-details")).to_have_attribute("aria-expanded", "false")
