"""Which skills a conversation sees (`groups`), and how they reach its system prompt."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mind.skills.prompt import INDEX_HEADER
from mind.skills.store import SkillStore

# The `write_skill` fixture: (directory, relative path, name, **front matter) -> path.
WriteSkill = Callable[..., Path]


def _visible(store: SkillStore, key: str, profile: str = "default") -> list[str]:
    return [skill.name for skill in store.catalog.visible(key, profile)]


def test_a_skill_without_groups_is_seen_by_every_conversation(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path, "open.skill.md", "open")
    store = SkillStore([tmp_path])
    store.reload()

    assert _visible(store, "p_alice") == _visible(store, "g_team", "other") == ["open"]


def test_groups_match_the_profile_name(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path, "work.skill.md", "work", groups="[work]")
    write_skill(tmp_path, "usual.skill.md", "usual", groups="[default]")
    store = SkillStore([tmp_path])
    store.reload()

    assert _visible(store, "p_alice") == ["usual"]
    assert _visible(store, "p_alice", "work") == ["work"]


def test_groups_match_the_conversation_key_with_a_glob(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path, "team.skill.md", "team", groups='["g_*"]')
    write_skill(tmp_path, "mine.skill.md", "mine", groups="[p_alice]")
    store = SkillStore([tmp_path])
    store.reload()

    assert _visible(store, "g_kitchen") == ["team"]
    assert _visible(store, "p_alice") == ["mine"]
    assert _visible(store, "p_bob") == []


def test_always_skills_are_inlined_and_the_others_only_indexed(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path, "tone.skill.md", "tone", always="true", body="Speak plainly.")
    write_skill(tmp_path, "brew.skill.md", "brew", description="Brewing coffee.", body="SECRET")
    store = SkillStore([tmp_path])
    store.reload()

    prompt = store.catalog_for("p_alice")

    assert prompt == (f"Skill: tone\n\nSpeak plainly.\n\n{INDEX_HEADER}\n- brew: Brewing coffee.")
    assert "view_skill" in INDEX_HEADER


def test_the_prompt_shows_only_the_skills_the_conversation_sees(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path, "team.skill.md", "team", groups='["g_*"]')
    store = SkillStore([tmp_path])
    store.reload()

    assert "team" in store.catalog_for("g_kitchen")
    assert store.catalog_for("p_alice") == ""
