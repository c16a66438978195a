"""End to end: a real Mind and real `tobe hand serve --mcp` processes (hosting the remote test
server) competing for a Hand name, and `allow`/`hide` naming tools the server does not list."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.admin_cli import Admin
from helpers.mind_process import MindProcess, issue_token, running_mind
from remote_server import TOKEN, RemoteServer

from tests.remote.remote_processes import HandProcess

pytestmark = pytest.mark.e2e

NAME = "tracker-box"


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    with running_mind(tmp_path_factory.mktemp("mind"), script=None, clients=()) as process:
        yield process


@pytest.fixture(scope="module")
def token(mind: MindProcess) -> str:
    """One credential for every Hand here: the same principal, so only `--replace` decides."""
    return issue_token(mind.url, kind="hand", principal=NAME, scopes=["serve:alice"])


def _config(remote: RemoteServer, **server: object) -> dict[str, object]:
    entry = {"url": remote.url, "headers": {"Authorization": f"Bearer {TOKEN}"}, **server}
    return {"name": NAME, "mcpServers": {"remote": entry}}


def _hand(
    mind: MindProcess, token: str, base: Path, config: dict[str, object], *options: str
) -> HandProcess:
    base.mkdir(parents=True, exist_ok=True)
    (base / "mcp.json").write_text(json.dumps(config))
    argv = [sys.executable, "-m", "tobe", "hand", "serve", "--mind", mind.address]
    argv += ["--mcp", str(base / "mcp.json"), *options]
    process = HandProcess(mind.address, token, base / "unused", argv=argv)
    process.start()
    return process


def _hand_id(process: HandProcess) -> str:
    """The id the Mind gave the process's (last) attach, from its `attached as` line."""
    attached = [line for line in process.output if f"attached as {NAME} (" in line]
    match = re.search(r"attached as \S+ \((h_[0-9a-f]+)\)", attached[-1])
    assert match is not None, attached
    return match.group(1)


def _holder(mind: MindProcess) -> str:
    """The id of the Hand the Mind has attached under NAME."""
    hands = Admin(mind.data_dir).json("status")["hands"]
    (holder,) = [hand["hand_id"] for hand in hands if hand["name"] == NAME]
    return str(holder)


def _errors(process: HandProcess) -> list[str]:
    return [line for line in process.output if line.startswith("Error:")]


@pytest.fixture
def first(
    mind: MindProcess, token: str, remote: RemoteServer, tmp_path: Path
) -> Iterator[HandProcess]:
    """A Hand attached under the name its MCP servers file gives (no --name)."""
    process = _hand(mind, token, tmp_path / "first", _config(remote))
    try:
        process.wait_attached(timeout=60)
        yield process
    finally:
        process.kill()


def test_an_mcp_hand_without_name_attaches_under_the_name_its_file_gives(
    mind: MindProcess, first: HandProcess
) -> None:
    assert _holder(mind) == _hand_id(first)


def test_a_second_hand_under_a_live_name_is_refused_in_one_line(
    mind: MindProcess, token: str, remote: RemoteServer, first: HandProcess, tmp_path: Path
) -> None:
    second = _hand(mind, token, tmp_path / "second", _config(remote))
    try:
        assert second.wait_exit() != 0
    finally:
        second.kill()
    (error,) = _errors(second)
    assert error.startswith("Error: the Mind refused this Hand (ALREADY_EXISTS: ")
    assert f"{NAME!r} is held by a live Hand" in error and "--replace" in error
    assert second.attached == 0
    assert first.process is not None and first.process.poll() is None
    assert _holder(mind) == _hand_id(first)


def test_replace_takes_the_name_over_and_the_replaced_hand_stops_for_good(
    mind: MindProcess, token: str, remote: RemoteServer, first: HandProcess, tmp_path: Path
) -> None:
    second = _hand(mind, token, tmp_path / "second", _config(remote), "--replace")
    try:
        second.wait_attached(timeout=60)
        assert first.wait_exit() != 0
        (error,) = _errors(first)
        assert error.startswith("Error: the Mind refused this Hand (ABORTED: another Hand (")
        assert f"took the name {NAME!r} over" in error
        assert error.endswith("this Hand stops and does not reconnect")
        assert first.attached == 1
        assert _holder(mind) == _hand_id(second)
        assert second.process is not None and second.process.poll() is None
    finally:
        second.kill()


def test_allow_and_hide_naming_tools_the_server_does_not_list_stop_the_start(
    mind: MindProcess, token: str, remote: RemoteServer, tmp_path: Path
) -> None:
    config = _config(remote, allow=["shout", "shuot"], hide=["refuse", "no_such_tool"])
    process = _hand(mind, token, tmp_path / "typo", config)
    try:
        assert process.wait_exit(timeout=60) != 0
    finally:
        process.kill()
    (error,) = _errors(process)
    assert error.startswith("Error: MCP server remote: `allow` names 'shuot'; ")
    assert "`hide` names 'no_such_tool', which it does not list (it lists " in error
    assert "'shout'" not in error and "'refuse'" not in error
    assert process.attached == 0
