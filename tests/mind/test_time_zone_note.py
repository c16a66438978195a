"""The current-time note says the person's local time when their time zone is known."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mind.conversation.history import HistoryMessage
from mind.core.loop import AgentCore
from mind.core.prompt import CURRENT_TIME_NOTE
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import RunScope, ToolRuntime
from mind.core.view import is_runtime_note, provider_messages
from mind.profiles.errors import ProfileError
from mind.profiles.model import Profile
from mind.profiles.validation import validate
from mind.providers.base import ProviderRequest, ProviderResult
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode
from tobe.config import ProfileEntry

T = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)
PARIS_NOTE = (
    f"[2026-09-10 14:00:30 GMT] {CURRENT_TIME_NOTE}. The person's time zone is Europe/Paris; "
    "there it is Thursday 2026-09-10 16:00:30 (UTC+02:00)."
)


def test_the_note_gives_the_local_time_in_the_persons_zone() -> None:
    history = [HistoryMessage(1, "user", "hi", T)]

    note = provider_messages(history, T, zone="Europe/Paris")[-1]

    assert note.text == PARIS_NOTE
    assert is_runtime_note(note.text)


def test_without_a_zone_or_in_utc_the_note_is_the_plain_gmt_one() -> None:
    history = [HistoryMessage(1, "user", "hi", T)]
    plain = f"[2026-09-10 14:00:30 GMT] {CURRENT_TIME_NOTE}"

    assert provider_messages(history, T)[-1].text == plain
    assert provider_messages(history, T, zone="UTC")[-1].text == plain


class RecordingProvider:
    name, model = "stub", "stub"

    def __init__(self) -> None:
        self.requests: list[ProviderRequest] = []

    async def complete(self, request: ProviderRequest, on_event: Any) -> ProviderResult:
        self.requests.append(request)
        return ProviderResult(text="ok")

    async def aclose(self) -> None:
        return None


class Journal:
    async def record_assistant(self, step: int, result: ProviderResult, calls: Any) -> Any:
        return HistoryMessage(2, "assistant", result.text, T)

    def steer_waiting(self) -> bool:
        return False

    async def take_steers(self) -> list[HistoryMessage]:
        return []


async def _last_note(profile: Profile, zones: dict[str, str]) -> str:
    provider = RecordingProvider()
    core = AgentCore(
        provider,
        ToolRegistry(),
        ToolRuntime(AllowAll()),
        step_limit=2,
        clock=lambda: T,
        time_zone_of=lambda principal: zones.get(principal, "UTC"),
    )
    journal: Any = Journal()
    scope = RunScope(
        "p_c", "run_1", "alice", DetailMode.TRANSPARENT, journal, lambda *a: None, profile=profile
    )
    await core.run(scope, [HistoryMessage(1, "user", "hi", T)], journal, lambda *d: None)
    return provider.requests[0].messages[-1].text


async def test_a_run_tells_the_model_its_principals_zone() -> None:
    assert await _last_note(Profile("p"), {"alice": "Europe/Paris"}) == PARIS_NOTE


async def test_a_profiles_zone_wins_over_the_principals() -> None:
    note = await _last_note(Profile("p", time_zone="Asia/Tokyo"), {"alice": "Europe/Paris"})

    assert "time zone is Asia/Tokyo; there it is Thursday 2026-09-10 23:00:30 (UTC+09:00)" in note


def test_an_unknown_zone_is_refused_in_settings_and_from_code() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Base'"):
        ProfileEntry(name="p", platform_tools=[], time_zone="Mars/Base")
    with pytest.raises(ProfileError, match="profile 'p': unknown time zone 'Mars/Base'"):
        validate(Profile("p", time_zone="Mars/Base"), set())
