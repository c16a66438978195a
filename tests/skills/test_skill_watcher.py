"""Hot reload: the watcher (real `watchfiles` on a temporary directory) keeps skills current."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from helpers.eventually import eventually_async

from mind.skills.store import SkillStore
from mind.skills.watcher import DirectoryWatcher

# The `write_skill` fixture: (directory, relative path, name, **front matter) -> path.
WriteSkill = Callable[..., Path]
# Generous: a reload follows a change within about a second; a busy machine may be slower.
RELOAD_TIMEOUT = 60.0


@pytest.fixture
async def watched(tmp_path: Path) -> AsyncIterator[tuple[SkillStore, Path]]:
    """A store of `<tmp>/skills` (created by each test as it needs), watched until the end."""
    directory = tmp_path / "skills"
    store = SkillStore([directory])
    store.reload()
    watcher = DirectoryWatcher([store])
    await watcher.start()
    try:
        yield store, directory
    finally:
        await watcher.stop()


async def test_an_edited_skill_is_reloaded_with_a_new_revision(
    watched: tuple[SkillStore, Path], write_skill: WriteSkill
) -> None:
    store, directory = watched
    write_skill(directory, "brew.skill.md", "brew", body="v1")
    await eventually_async(lambda: store.catalog.skills, RELOAD_TIMEOUT, what="the skill")

    write_skill(directory, "brew.skill.md", "brew", body="v2")

    skill = await eventually_async(
        lambda: store.catalog.skills["brew"],
        RELOAD_TIMEOUT,
        until=lambda skill: skill.body == "v2",
        what="the edited skill reloaded",
    )
    assert skill.revision == 2


async def test_a_skill_added_to_a_watched_directory_is_loaded(
    watched: tuple[SkillStore, Path], write_skill: WriteSkill
) -> None:
    store, directory = watched
    directory.mkdir()
    write_skill(directory, "deep/er/cook.skill.md", "cook")

    await eventually_async(
        lambda: list(store.catalog.skills), RELOAD_TIMEOUT, what="the new skill loaded"
    )

    assert list(store.catalog.skills) == ["cook"]


async def test_a_directory_created_after_the_start_is_watched_once_it_exists(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    directory = tmp_path / "not" / "yet" / "skills"
    store = SkillStore([directory])
    store.reload()
    watcher = DirectoryWatcher([store])
    await watcher.start()
    try:
        write_skill(directory, "brew.skill.md", "brew", body="first")
        await eventually_async(
            lambda: store.catalog.skills.get("brew"), RELOAD_TIMEOUT, what="the first skill"
        )
        write_skill(directory, "brew.skill.md", "brew", body="second")
        skill = await eventually_async(
            lambda: store.catalog.skills["brew"],
            RELOAD_TIMEOUT,
            until=lambda skill: skill.body == "second",
            what="the edit in the new directory",
        )
    finally:
        await watcher.stop()

    assert skill.revision == 2


async def test_a_removed_skill_disappears_after_the_reload(
    watched: tuple[SkillStore, Path], write_skill: WriteSkill
) -> None:
    store, directory = watched
    path = write_skill(directory, "brew.skill.md", "brew")
    await eventually_async(lambda: store.catalog.skills, RELOAD_TIMEOUT, what="the skill")

    path.unlink()

    await eventually_async(
        lambda: store.catalog.skills, RELOAD_TIMEOUT, until=lambda s: not s, what="no skill"
    )
