"""Which files are resources, and the catalog the system prompt carries."""

from __future__ import annotations

from pathlib import Path

from mind.core.tool_registry import ToolRegistry
from mind.resources.catalog import HEADER
from mind.resources.store import ResourceStore


def _write(root: Path, *relatives: str) -> None:
    for relative in relatives:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"text of {relative}", encoding="utf-8")


def test_md_files_are_read_recursively_skipping_dot_tooling_folders_and_other_extensions(
    tmp_path: Path,
) -> None:
    _write(
        tmp_path,
        "guide.md",
        "research/01-writings.md",
        "research/deep/notes.md",
        ".hidden.md",
        ".obsidian/config.md",
        "node_modules/pkg/README.md",
        "venv/lib/README.md",
        ".venv/lib/README.md",
        "__pycache__/cached.md",
        "research/image.png",
        "research/notes.txt",
        "research/README.markdown",
    )

    catalog = ResourceStore([tmp_path]).reload()

    assert list(catalog.resources) == [
        "guide.md",
        "research/01-writings.md",
        "research/deep/notes.md",
    ]


def test_the_catalog_lists_each_path_under_a_header_naming_read_resource(tmp_path: Path) -> None:
    _write(tmp_path, "research/01-writings.md", "guide.md")
    store = ResourceStore([tmp_path])
    store.reload()

    assert store.catalog_for("p_alice") == (f"{HEADER}\n- guide.md\n- research/01-writings.md")
    assert "`read_resource`" in HEADER


def test_no_resources_means_no_catalog_and_no_tool(tmp_path: Path) -> None:
    _write(tmp_path, "notes.txt")
    store = ResourceStore([tmp_path, tmp_path / "absent"])
    store.reload()
    registry = ToolRegistry()
    registry.add_source(store)

    assert store.catalog_for("p_alice") == ""
    assert "read_resource" not in registry.tools_for("p_alice")


def test_resources_offer_read_resource_to_every_conversation(tmp_path: Path) -> None:
    _write(tmp_path, "guide.md")
    store = ResourceStore([tmp_path])
    store.reload()
    registry = ToolRegistry()
    registry.add_source(store)

    assert "read_resource" in registry.tools_for("p_alice")
    assert "read_resource" in registry.tools_for("g_team")


def test_on_the_same_relative_path_a_directory_listed_later_wins(tmp_path: Path) -> None:
    general, specific = tmp_path / "general", tmp_path / "specific"
    _write(general, "guide.md", "only-general.md")
    _write(specific, "guide.md")
    store = ResourceStore([general, specific])

    catalog = store.reload()

    assert list(catalog.resources) == ["guide.md", "only-general.md"]
    assert catalog.read("guide.md") == "text of guide.md"
    assert catalog.resources["guide.md"].root == specific
