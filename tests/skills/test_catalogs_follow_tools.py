"""A run's system prompt lists skills and resources only when its profile offers their tool."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mind.conversation.history import HistoryMessage
from mind.core.loop import AgentCore
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import RunScope, ToolRuntime
from mind.profiles.model import Profile
from mind.providers.base import ProviderRequest, ProviderResult
from mind.resources.catalog import HEADER as RESOURCES_HEADER
from mind.resources.store import ResourceStore
from mind.skills.prompt import INDEX_HEADER
from mind.skills.store import SkillStore
from mind.tools.authorizer import AllowAll
from mind.tools.base import DetailMode

T = datetime(2026, 9, 10, 14, 0, 30, tzinfo=UTC)
WriteSkill = Callable[..., Path]


class RecordingProvider:
    """Answers every request with one text and keeps the requests."""

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
        return HistoryMessage(1, "assistant", result.text, T)

    def steer_waiting(self) -> bool:
        return False

    async def take_steers(self) -> list[HistoryMessage]:
        return []


async def _system_prompt(root: Path, write_skill: WriteSkill, profile: Profile) -> str:
    write_skill(root / "skills", "tone.skill.md", "tone", always="true", body="Speak plainly.")
    write_skill(root / "skills", "brew.skill.md", "brew", description="Brewing coffee.")
    (root / "resources").mkdir()
    (root / "resources" / "guide.md").write_text("# Guide\n", encoding="utf-8")
    skills, resources = SkillStore([root / "skills"]), ResourceStore([root / "resources"])
    skills.reload()
    resources.reload()
    registry = ToolRegistry()
    registry.add_platform_source(skills, ["view_skill"])
    registry.add_platform_source(resources, ["read_resource"])
    provider = RecordingProvider()
    core = AgentCore(
        provider,
        registry,
        ToolRuntime(AllowAll()),
        step_limit=2,
        clock=lambda: T,
        catalog_sources=[skills, resources],
    )
    journal: Any = Journal()
    scope = RunScope(
        "p_c", "run_1", "alice", DetailMode.TRANSPARENT, journal, lambda *a: None, profile=profile
    )
    await core.run(scope, [HistoryMessage(0, "user", "hi", T)], journal, lambda *d: None)
    (request,) = provider.requests
    return request.system


async def test_a_profile_without_the_tools_gets_neither_index_nor_resource_list(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    system = await _system_prompt(tmp_path, write_skill, Profile("bare", platform_tools=()))

    assert INDEX_HEADER not in system and "brew" not in system
    assert RESOURCES_HEADER not in system and "guide.md" not in system
    # An always-skill needs no tool: its body is in the prompt.
    assert "Skill: tone\n\nSpeak plainly." in system


async def test_a_profile_offering_the_tools_gets_the_index_and_the_resource_list(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    profile = Profile("reader", platform_tools=("view_skill", "read_resource"))
    system = await _system_prompt(tmp_path, write_skill, profile)

    assert f"{INDEX_HEADER}\n- brew: Brewing coffee." in system
    assert f"{RESOURCES_HEADER}\n- guide.md" in system


async def test_each_catalog_follows_its_own_tool(tmp_path: Path, write_skill: WriteSkill) -> None:
    profile = Profile("skills-only", platform_tools=("view_skill",))
    system = await _system_prompt(tmp_path, write_skill, profile)

    assert INDEX_HEADER in system and RESOURCES_HEADER not in system
