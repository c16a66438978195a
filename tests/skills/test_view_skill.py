"""`view_skill`: offered when there is something to read, reads only what the conversation sees."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema

from mind.core.tool_registry import ToolRegistry
from mind.skills.store import SkillStore
from mind.tools.base import Effect, ToolContext

# The `write_skill` fixture: (directory, relative path, name, **front matter) -> path.
WriteSkill = Callable[..., Path]


async def test_view_skill_returns_the_body_with_name_revision_and_digest(
    tmp_path: Path, write_skill: WriteSkill, tool_context: Callable[[str], ToolContext]
) -> None:
    write_skill(tmp_path, "brew.skill.md", "brew", body="Grind the beans.")
    store = SkillStore([tmp_path])
    skill = store.reload().skills["brew"]
    (tool,) = store.tools_for("p_alice")

    outcome = await tool.run({"name": "brew"}, tool_context("p_alice"))

    assert outcome.ok and tool.effect is Effect.READ_ONLY
    assert outcome.output == (f"Skill brew (revision 1, sha256 {skill.digest})\n\nGrind the beans.")


async def test_view_skill_refuses_a_skill_the_conversation_does_not_see_listing_the_visible(
    tmp_path: Path, write_skill: WriteSkill, tool_context: Callable[[str], ToolContext]
) -> None:
    write_skill(tmp_path, "team.skill.md", "team", groups='["g_*"]', body="TEAM ONLY")
    write_skill(tmp_path, "brew.skill.md", "brew")
    write_skill(tmp_path, "cook.skill.md", "cook")
    store = SkillStore([tmp_path])
    store.reload()
    (tool,) = store.tools_for("p_alice")

    outcome = await tool.run({"name": "team"}, tool_context("p_alice"))

    assert not outcome.ok and "TEAM ONLY" not in outcome.output
    assert outcome.error == "no skill named 'team' here; skills you can read: brew, cook"


def test_view_skill_is_offered_only_when_a_non_always_skill_is_visible(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path, "tone.skill.md", "tone", always="true")
    write_skill(tmp_path, "team.skill.md", "team", groups='["g_*"]')
    store = SkillStore([tmp_path])
    store.reload()
    registry = ToolRegistry()
    registry.add_source(store)

    assert "view_skill" not in registry.tools_for("p_alice")
    assert "view_skill" in registry.tools_for("g_kitchen")


def test_view_skill_arguments_are_one_name_string_by_its_json_schema(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path, "brew.skill.md", "brew")
    store = SkillStore([tmp_path])
    store.reload()
    (tool,) = store.tools_for("p_alice")
    validator = jsonschema.validators.validator_for(tool.parameters)(tool.parameters)

    assert validator.is_valid({"name": "brew"})
    wrongs: list[dict[str, Any]] = [{}, {"name": ""}, {"name": 3}, {"name": "b", "x": 1}]
    for wrong in wrongs:
        assert not validator.is_valid(wrong), wrong
