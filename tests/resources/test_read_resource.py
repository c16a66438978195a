"""`read_resource` reads a catalogued document and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mind.resources.store import ResourceStore
from mind.tools.base import Effect, Tool, ToolContext


@pytest.fixture
def resources(tmp_path: Path) -> Path:
    root = tmp_path / "resources"
    (root / "research").mkdir(parents=True)
    (root / "research" / "01-writings.md").write_text("Essays, 1999-2004.", encoding="utf-8")
    (tmp_path / "secret.md").write_text("SECRET", encoding="utf-8")
    return root


def _tool(store: ResourceStore) -> Tool:
    store.reload()
    (tool,) = store.tools_for("p_alice")
    return tool


async def test_read_resource_returns_the_text_of_a_catalogued_path(
    resources: Path, tool_context: Callable[[str], ToolContext]
) -> None:
    tool = _tool(ResourceStore([resources]))

    outcome = await tool.run({"path": "research/01-writings.md"}, tool_context("p_alice"))

    assert outcome.ok and outcome.output == "Essays, 1999-2004."
    assert tool.effect is Effect.READ_ONLY


@pytest.mark.parametrize(
    "path",
    [
        "../secret.md",
        "research/../../secret.md",
        "research/../research/01-writings.md",
        "./research/01-writings.md",
        "research",
    ],
)
async def test_read_resource_refuses_a_path_not_written_as_catalogued(
    path: str, resources: Path, tool_context: Callable[[str], ToolContext]
) -> None:
    tool = _tool(ResourceStore([resources]))

    outcome = await tool.run({"path": path}, tool_context("p_alice"))

    assert not outcome.ok and "not in the resources catalog" in outcome.error
    assert outcome.output == ""


async def test_read_resource_refuses_an_absolute_path_even_to_a_catalogued_file(
    resources: Path, tool_context: Callable[[str], ToolContext]
) -> None:
    tool = _tool(ResourceStore([resources]))
    absolute = resources / "research" / "01-writings.md"

    outcome = await tool.run({"path": str(absolute)}, tool_context("p_alice"))

    assert not outcome.ok and "not in the resources catalog" in outcome.error


async def test_a_symlink_leading_out_of_the_directory_is_neither_listed_nor_read(
    resources: Path, tool_context: Callable[[str], ToolContext]
) -> None:
    (resources / "escape.md").symlink_to(resources.parent / "secret.md")
    (resources / "outside").symlink_to(resources.parent, target_is_directory=True)
    (resources / "inside.md").symlink_to(resources / "research" / "01-writings.md")
    store = ResourceStore([resources])
    tool = _tool(store)

    escape = await tool.run({"path": "escape.md"}, tool_context("p_alice"))
    through = await tool.run({"path": "outside/secret.md"}, tool_context("p_alice"))

    assert list(store.catalog.resources) == ["inside.md", "research/01-writings.md"]
    assert not escape.ok and not through.ok
    assert "SECRET" not in escape.output + through.output


async def test_a_catalogued_file_replaced_by_a_symlink_out_of_the_directory_is_refused(
    resources: Path, tool_context: Callable[[str], ToolContext]
) -> None:
    tool = _tool(ResourceStore([resources]))
    listed = resources / "research" / "01-writings.md"
    listed.unlink()
    listed.symlink_to(resources.parent / "secret.md")

    outcome = await tool.run({"path": "research/01-writings.md"}, tool_context("p_alice"))

    assert not outcome.ok and "leads outside" in outcome.error
    assert "SECRET" not in outcome.output


async def test_a_file_added_after_the_load_is_refused_until_a_reload_catalogues_it(
    resources: Path, tool_context: Callable[[str], ToolContext]
) -> None:
    store = ResourceStore([resources])
    tool = _tool(store)
    (resources / "new.md").write_text("fresh", encoding="utf-8")

    before = await tool.run({"path": "new.md"}, tool_context("p_alice"))
    store.reload()
    after = await tool.run({"path": "new.md"}, tool_context("p_alice"))

    assert not before.ok and "not in the resources catalog" in before.error
    assert after.ok and after.output == "fresh"
