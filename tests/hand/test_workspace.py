"""The reference Hand's workspace confinement and command policy."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hand import Offer
from hand.reference import build_reference_hand
from hand.workspace import WorkspaceError


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (workspace / "notes.txt").write_text("alpha\nbeta needle\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "deep.txt").write_text("needle deep")
    os.symlink(outside, workspace / "out_dir")
    os.symlink(outside / "secret.txt", workspace / "out_file")
    return workspace, outside


def tools(workspace: Path, **options: object) -> dict:
    hand = build_reference_hand("laptop", workspace, **options)  # type: ignore[arg-type]
    return hand, hand.tools


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("read_file", {"path": "../outside/secret.txt"}, "contains '..'"),
        ("read_file", {"path": "sub/../../outside/secret.txt"}, "contains '..'"),
        ("read_file", {"path": "/etc/passwd"}, "is absolute"),
        ("read_file", {"path": "~/secret.txt"}, "is absolute"),
        ("read_file", {"path": "out_file"}, "outside the workspace"),
        ("read_file", {"path": "out_dir/secret.txt"}, "outside the workspace"),
        ("list_files", {"path": "out_dir"}, "outside the workspace"),
        ("search_files", {"pattern": "secret", "path": "out_dir"}, "outside the workspace"),
        ("write_file", {"path": "out_file", "content": "pwned"}, "outside the workspace"),
        ("write_file", {"path": "out_dir/new.txt", "content": "pwned"}, "outside the workspace"),
        ("write_file", {"path": "../escape.txt", "content": "pwned"}, "contains '..'"),
        ("write_file", {"path": "/tmp/escape.txt", "content": "pwned"}, "is absolute"),
    ],
)
async def test_escape_attempts_are_refused_and_touch_nothing_outside(
    places: tuple[Path, Path], tool: str, arguments: dict, message: str
) -> None:
    workspace, outside = places
    before = snapshot(outside.parent)
    _, available = tools(workspace)
    with pytest.raises(WorkspaceError, match=message):
        await available[tool].call(arguments)
    assert snapshot(outside.parent) == before
    assert not Path("/tmp/escape.txt").exists()


async def test_search_does_not_follow_symlinks_out(places: tuple[Path, Path]) -> None:
    workspace, _ = places
    _, available = tools(workspace)
    found = json.loads((await available["search_files"].call({"pattern": "needle"})).text)
    assert sorted(m["path"] for m in found["matches"]) == ["notes.txt", "sub/deep.txt"]
    none = json.loads((await available["search_files"].call({"pattern": "top secret"})).text)
    assert none["matches"] == []


async def test_files_can_be_listed_written_and_read_inside(places: tuple[Path, Path]) -> None:
    workspace, _ = places
    _, available = tools(workspace)
    written = json.loads(
        (await available["write_file"].call({"path": "new/dir/file.txt", "content": "hé"})).text
    )
    assert written == {"path": "new/dir/file.txt", "bytes": 3}
    read = json.loads((await available["read_file"].call({"path": "new/dir/file.txt"})).text)
    assert read["content"] == "hé" and not read["truncated"]
    listing = json.loads((await available["list_files"].call({"path": "."})).text)
    kinds = {e["path"]: e["type"] for e in listing["entries"]}
    assert kinds["out_dir"] == "symlink" and kinds["sub"] == "dir" and kinds["new"] == "dir"


def offer(tool: str, arguments: dict) -> Offer:
    return Offer("t_1", 1, tool, arguments, "p_x", "")


def test_read_only_policy_rejects_every_tool_that_is_not_read_only(
    places: tuple[Path, Path],
) -> None:
    workspace, _ = places
    hand, _ = tools(workspace, read_only=True, allowed_commands=["echo"])
    assert hand.policy is not None
    assert "read-only" in hand.policy(offer("write_file", {"path": "x", "content": ""}))
    assert "read-only" in hand.policy(offer("run_command", {"argv": ["echo", "hi"]}))
    assert hand.policy(offer("read_file", {"path": "notes.txt"})) is None


def test_commands_outside_the_allowed_list_are_rejected(places: tuple[Path, Path]) -> None:
    workspace, _ = places
    hand, _ = tools(workspace, allowed_commands=["echo"])
    assert hand.policy is not None
    assert "not allowed" in hand.policy(offer("run_command", {"argv": ["rm", "-rf", "x"]}))
    assert hand.policy(offer("run_command", {"argv": ["echo", "hi"]})) is None


async def test_command_runs_in_the_workspace_with_output_limit(
    places: tuple[Path, Path],
) -> None:
    workspace, _ = places
    python = "python3"  # the system's, as the command sandbox sees it
    _, available = tools(workspace, allowed_commands=[python], max_output_bytes=1024)
    code = "import os; print(os.getcwd()); print('x' * 5000)"
    result = json.loads((await available["run_command"].call({"argv": [python, "-c", code]})).text)
    assert result["exit_code"] == 0 and result["truncated"]
    assert result["stdout"].startswith(str(workspace.resolve()))
    assert len(result["stdout"].encode()) == 1024


async def test_command_is_killed_at_its_timeout(places: tuple[Path, Path]) -> None:
    workspace, _ = places
    _, available = tools(workspace, allowed_commands=["python3"], command_timeout=0.5)
    code = "import time; time.sleep(30)"
    result = json.loads(
        (await available["run_command"].call({"argv": ["python3", "-c", code], "timeout": 60})).text
    )
    assert result["timed_out"] and result["exit_code"] is None and result["timeout"] == 0.5


async def test_command_arguments_pointing_outside_are_refused(places: tuple[Path, Path]) -> None:
    workspace, outside = places
    _, available = tools(workspace, allowed_commands=["cat"])
    with pytest.raises(WorkspaceError, match="points outside the workspace"):
        await available["run_command"].call({"argv": ["cat", str(outside / "secret.txt")]})
    with pytest.raises(WorkspaceError, match="points outside the workspace"):
        await available["run_command"].call({"argv": ["cat", "../outside/secret.txt"]})
