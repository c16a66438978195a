"""Loading skill files: the path priority on name clashes, digests and revisions."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from mind.skills.catalog import Shadowed
from mind.skills.store import SkillStore

# The `write_skill` fixture: (directory, relative path, name, **front matter) -> path.
WriteSkill = Callable[..., Path]


def test_a_directory_listed_later_wins_a_name_clash_even_against_a_deeper_file(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    general, specific = tmp_path / "general", tmp_path / "specific"
    deep = write_skill(general, "a/b/c/brew.skill.md", "brew", body="general")
    top = write_skill(specific, "brew.skill.md", "brew", body="specific")

    catalog = SkillStore([general, specific]).reload()

    assert catalog.skills["brew"].body == "specific"
    assert catalog.shadowed == [Shadowed("brew", kept=top, shadowed=deep)]


def test_within_one_directory_the_deeper_file_wins(tmp_path: Path, write_skill: WriteSkill) -> None:
    shallow = write_skill(tmp_path, "brew.skill.md", "brew", body="shallow")
    deeper = write_skill(tmp_path, "kitchen/brew.skill.md", "brew", body="deeper")

    catalog = SkillStore([tmp_path]).reload()

    assert catalog.skills["brew"].body == "deeper"
    assert catalog.shadowed == [Shadowed("brew", kept=deeper, shadowed=shallow)]


def test_at_equal_depth_the_path_sorting_first_wins(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    second = write_skill(tmp_path, "b/brew.skill.md", "brew", body="from b")
    first = write_skill(tmp_path, "a/brew.skill.md", "brew", body="from a")

    catalog = SkillStore([tmp_path]).reload()

    assert catalog.skills["brew"].body == "from a"
    assert catalog.shadowed == [Shadowed("brew", kept=first, shadowed=second)]


def test_a_shadowed_skill_is_logged_naming_both_files(
    tmp_path: Path, write_skill: WriteSkill, caplog: pytest.LogCaptureFixture
) -> None:
    shallow = write_skill(tmp_path, "brew.skill.md", "brew")
    deeper = write_skill(tmp_path, "x/brew.skill.md", "brew")

    with caplog.at_level(logging.WARNING, logger="mind.skills"):
        SkillStore([tmp_path]).reload()

    (record,) = [r for r in caplog.records if "shadows" in r.getMessage()]
    assert str(deeper) in record.getMessage() and str(shallow) in record.getMessage()


def test_skills_are_found_recursively_and_other_files_and_dot_folders_are_not(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path, "one.skill.md", "one")
    write_skill(tmp_path, "deep/down/two.skill.md", "two")
    write_skill(tmp_path, "three.md", "three")
    write_skill(tmp_path, ".git/four.skill.md", "four")

    assert list(SkillStore([tmp_path]).reload().skills) == ["one", "two"]


def test_missing_directories_are_simply_empty(tmp_path: Path) -> None:
    catalog = SkillStore([tmp_path / "absent"]).reload()

    assert (catalog.skills, catalog.errors, catalog.shadowed) == ({}, [], [])


def test_the_digest_is_the_sha256_of_the_file_and_the_revision_starts_at_one(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    path = write_skill(tmp_path, "brew.skill.md", "brew")

    skill = SkillStore([tmp_path]).reload().skills["brew"]

    assert skill.digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert skill.revision == 1


def test_an_edit_changes_the_digest_and_bumps_the_revision_and_a_reload_without_one_does_not(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    store = SkillStore([tmp_path])
    write_skill(tmp_path, "brew.skill.md", "brew", body="v1")
    first = store.reload().skills["brew"]

    unchanged = store.reload().skills["brew"]
    write_skill(tmp_path, "brew.skill.md", "brew", body="v2")
    edited = store.reload().skills["brew"]

    assert (unchanged.revision, unchanged.digest) == (1, first.digest)
    assert edited.revision == 2 and edited.digest != first.digest
    assert edited.body == "v2"


def test_a_skill_that_disappears_and_returns_changed_continues_its_revisions(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    store = SkillStore([tmp_path])
    path = write_skill(tmp_path, "brew.skill.md", "brew", body="v1")
    store.reload()
    path.unlink()
    assert "brew" not in store.reload().skills

    write_skill(tmp_path, "brew.skill.md", "brew", body="v2")

    assert store.reload().skills["brew"].revision == 2
