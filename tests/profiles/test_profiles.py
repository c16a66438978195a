"""Profiles: declared in settings, made by the factory, validated, and their hooks."""

from __future__ import annotations

import pytest

from mind.core.tool_registry import ToolClash, ToolRegistry
from mind.profiles import hooks
from mind.profiles.book import ProfileBook
from mind.profiles.declared import declared_profiles
from mind.profiles.errors import ProfileError, ToolNameProblem, UnknownProfile
from mind.profiles.model import (
    DEFAULT_PROFILE,
    ConversationInfo,
    Profile,
    ProfileHooks,
    ToolCallInfo,
    TurnInfo,
)
from mind.profiles.validation import validate
from mind.providers.base import ThinkingLevel
from mind.scheduler.clock import SystemClock
from mind.tools.base import ToolOutcome
from mind.tools.builtin import builtin_tools
from tests.profiles.profile_fixtures import ShadowClock
from tobe.config import ProfileEntry, ProfilesSettings

PLATFORM = frozenset({"current_time", "wait", "view_skill", "read_resource"})
FIXTURES = "tests.profiles.profile_fixtures"


def _entry(**fields: object) -> ProfileEntry:
    return ProfileEntry.model_validate({"platform_tools": [], **fields})


def _book(*entries: ProfileEntry, **section: object) -> ProfileBook:
    settings = ProfilesSettings.model_validate({"profile": entries, **section})
    return ProfileBook.from_settings(settings, lambda: PLATFORM)


def test_a_declared_profile_carries_its_persona_tools_thinking_and_imported_hooks() -> None:
    entry = _entry(
        name="coach",
        persona="You are a running coach.",
        platform_tools=["current_time"],
        hand_tools=False,
        thinking="high",
        before_tool_call=f"{FIXTURES}:block_wait",
    )
    profile = declared_profiles(ProfilesSettings(profile=[entry]))["coach"]
    assert isinstance(profile, Profile)
    assert profile.persona == "You are a running coach."
    assert profile.platform_tools == ("current_time",)
    assert (profile.hand_tools, profile.awareness_tools) == (False, True)
    assert profile.thinking is ThinkingLevel.HIGH
    assert profile.hooks.before_tool_call is not None


def test_a_declared_profile_carries_its_next_turn_hook_budgets_and_tool_execution() -> None:
    entry = _entry(
        name="planner",
        prepare_next_turn=f"{FIXTURES}:stop_after_tools",
        thinking_budgets={"high": 20000, "low": 2000},
        tool_execution="parallel",
    )
    profile = declared_profiles(ProfilesSettings(profile=[entry]))["planner"]
    assert isinstance(profile, Profile)
    assert profile.hooks.prepare_next_turn is not None
    assert profile.thinking_budgets == {ThinkingLevel.HIGH: 20000, ThinkingLevel.LOW: 2000}
    assert profile.tool_execution == "parallel"
    assert _entry(name="plain").tool_execution == "sequential"


def test_a_budget_for_no_level_or_below_one_token_makes_only_its_profile_unusable() -> None:
    book = _book(
        _entry(name="odd", thinking_budgets={"huge": 5}),
        _entry(name="empty", thinking_budgets={"high": 0}),
        _entry(name="fine"),
    )
    with pytest.raises(ProfileError, match="profile 'odd': thinking_budgets names 'huge'"):
        book.check("odd")
    with pytest.raises(ProfileError, match="'high' must be at least 1 token"):
        book.check("empty")
    assert book.check("fine") == "fine"


def test_a_hook_that_does_not_import_makes_only_its_profile_unusable() -> None:
    book = _book(
        _entry(name="broken", after_tool_call="nowhere.module:hook"),
        _entry(name="fine"),
    )
    with pytest.raises(ProfileError, match="profile 'broken': after_tool_call 'nowhere.module"):
        book.check("broken")
    assert book.check("fine") == "fine"


def test_two_profiles_with_one_name_or_an_unknown_default_stop_the_whole_section() -> None:
    with pytest.raises(ProfileError, match="two profiles named 'a'"):
        _book(_entry(name="a"), _entry(name="a"))
    with pytest.raises(ProfileError, match="default 'nope' names no profile"):
        _book(default="nope")


def test_an_unknown_profile_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(UnknownProfile, match="no profile 'x'; known profiles: default, coach"):
        _book(_entry(name="coach")).check("x")


def test_an_empty_name_means_the_configured_default() -> None:
    assert _book(_entry(name="coach"), default="coach").check("") == "coach"


def test_an_unknown_platform_tool_is_refused_naming_the_profile_and_the_tool() -> None:
    bad = Profile("lean", platform_tools=("current_time", "teleport"))
    with pytest.raises(ToolNameProblem, match="profile 'lean' names the platform tool 'teleport'"):
        validate(bad, PLATFORM)


def test_a_platform_tool_named_twice_is_refused_naming_the_profile_and_the_tool() -> None:
    bad = Profile("twice", platform_tools=("wait", "wait"))
    with pytest.raises(
        ToolNameProblem, match="profile 'twice' names the platform tool 'wait' twice"
    ):
        validate(bad, PLATFORM)


def test_a_profile_tool_under_an_offered_platform_tools_name_is_a_clash() -> None:
    with pytest.raises(ToolNameProblem, match="profile 'own': two tools are named 'current_time'"):
        validate(Profile("own", tools=(ShadowClock(),)), PLATFORM)
    assert validate(Profile("own", platform_tools=("wait",), tools=(ShadowClock(),)), PLATFORM)


async def test_the_factory_shapes_a_conversations_profile_from_the_configured_one() -> None:
    book = _book(_entry(name="greeter", persona="x"), factory=f"{FIXTURES}:factory")
    made = await book.resolve(ConversationInfo("p_1", "alice", "greeter"))
    assert made.persona == "You greet alice by name."
    kept = await book.resolve(ConversationInfo("p_2", "alice", ""))
    assert kept is DEFAULT_PROFILE


async def test_a_factory_made_clash_fails_resolving_that_conversation_only() -> None:
    book = _book(
        _entry(name="clashing", platform_tools=["current_time"]), factory=f"{FIXTURES}:factory"
    )
    with pytest.raises(ToolNameProblem, match="profile 'clashing': two tools are named"):
        await book.resolve(ConversationInfo("p_1", "alice", "clashing"))
    assert (await book.resolve(ConversationInfo("p_2", "alice", "default"))).name == "default"


class _Hand:
    name, description, parameters, effect = "laptop__ls", "", {"type": "object"}, "read_only"
    hand_id = "hand_1"


class _Awareness:
    name, description, parameters, effect = "awareness_observe", "", {"type": "object"}, "read_only"
    hand_id = ""


class _Source:
    def __init__(self, *tools: object) -> None:
        self.tools = list(tools)

    def tools_for(self, conversation_key: str) -> list:  # type: ignore[type-arg]
        return self.tools


def _registry() -> ToolRegistry:
    registry = ToolRegistry(builtin_tools(SystemClock().now))
    registry.add_source(_Source(_Hand(), _Awareness()))
    return registry


def test_the_default_profile_offers_every_platform_hand_and_awareness_tool() -> None:
    assert list(_registry().tools_for("p_1")) == [
        "current_time",
        "wait",
        "laptop__ls",
        "awareness_observe",
    ]


def test_a_profile_offers_only_its_platform_tools_and_the_kinds_it_takes() -> None:
    lean = Profile("lean", platform_tools=("wait",), hand_tools=False)
    assert list(_registry().tools_for("p_1", lean)) == ["wait", "awareness_observe"]
    handy = Profile("handy", platform_tools=(), awareness_tools=False)
    assert list(_registry().tools_for("p_1", handy)) == ["laptop__ls"]


def test_a_source_tool_under_a_taken_name_raises_a_clash_naming_profile_and_tool() -> None:
    registry = _registry()
    clashing = _Awareness()
    clashing.name = "wait"
    registry.add_source(_Source(clashing))
    with pytest.raises(ToolClash, match="profile 'default': two tools are named 'wait'"):
        registry.tools_for("p_1")


def test_platform_source_names_count_as_platform_tools_even_while_absent() -> None:
    registry = ToolRegistry(builtin_tools(SystemClock().now))
    registry.add_platform_source(_Source(), ["view_skill"])
    assert registry.platform_names() == {"current_time", "wait", "view_skill"}


CALL = ToolCallInfo("p_1", "run_1", "call_1", "wait", {"seconds": 1})


async def test_before_tool_call_blocks_with_a_reason_naming_the_profile() -> None:
    from tests.profiles.profile_fixtures import block_wait

    profile = Profile("strict", hooks=ProfileHooks(before_tool_call=block_wait))
    assert await hooks.blocked(profile, CALL) == (
        "blocked by profile 'strict': waiting is not allowed here"
    )
    other = ToolCallInfo("p_1", "run_1", "call_2", "current_time", {})
    assert await hooks.blocked(profile, other) is None


async def test_after_tool_call_replaces_the_outcome_or_keeps_it() -> None:
    def redact(call: ToolCallInfo, outcome: ToolOutcome) -> ToolOutcome | None:
        return ToolOutcome(ok=True, output="[hidden]") if call.tool == "wait" else None

    profile = Profile("quiet", hooks=ProfileHooks(after_tool_call=redact))
    real = ToolOutcome(ok=True, output="secret")
    assert (await hooks.after_call(profile, CALL, real)).output == "[hidden]"
    assert await hooks.after_call(Profile("plain"), CALL, real) is real


async def test_a_raising_hook_is_an_error_of_the_call_not_of_the_run() -> None:
    def broken(call: ToolCallInfo) -> str | None:
        raise RuntimeError("boom")

    profile = Profile("buggy", hooks=ProfileHooks(before_tool_call=broken))
    assert "before_tool_call hook failed: RuntimeError" in (
        await hooks.blocked(profile, CALL) or ""
    )


async def test_should_stop_after_turn_decides_from_the_turn() -> None:
    from tests.profiles.profile_fixtures import stop_after_tools

    profile = Profile("once", hooks=ProfileHooks(should_stop_after_turn=stop_after_tools))
    assert await hooks.stops_after(profile, TurnInfo("p_1", "r", 0, "", ("wait",)))
    assert not await hooks.stops_after(profile, TurnInfo("p_1", "r", 0, "hi", ()))
