"""Resources are kept current by the same watcher as skills (real `watchfiles`)."""

from __future__ import annotations

from pathlib import Path

from helpers.eventually import eventually_async

from mind.resources.store import ResourceStore
from mind.skills.store import SkillStore
from mind.skills.watcher import DirectoryWatcher

RELOAD_TIMEOUT = 60.0


async def test_resources_added_and_edited_are_picked_up_by_the_shared_watcher(
    tmp_path: Path,
) -> None:
    resources = ResourceStore([tmp_path / "resources"])
    resources.reload()
    watcher = DirectoryWatcher([SkillStore([tmp_path / "skills"]), resources])
    await watcher.start()
    try:
        guide = tmp_path / "resources" / "notes" / "guide.md"
        guide.parent.mkdir(parents=True)
        guide.write_text("first", encoding="utf-8")
        await eventually_async(
            lambda: list(resources.catalog.resources),
            RELOAD_TIMEOUT,
            until=lambda paths: paths == ["notes/guide.md"],
            what="the new resource catalogued",
        )
        (guide.parent / "more.md").write_text("more", encoding="utf-8")
        await eventually_async(
            lambda: list(resources.catalog.resources),
            RELOAD_TIMEOUT,
            until=lambda paths: paths == ["notes/guide.md", "notes/more.md"],
            what="the second resource catalogued",
        )
    finally:
        await watcher.stop()

    assert resources.catalog.read("notes/more.md") == "more"
