"""`tobe hand serve --mcp FILE`: a bad file is one line and exit 1; without --workspace the
Hand offers only the MCP servers' tools, with or next to the reference Hand's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import hand.server
from hand import Hand
from hand.mcp.host import McpHost
from tobe.cli import main
from tobe.runtime.tls import ClientTls


def _serve(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *options: str
) -> tuple[int, str, list[tuple[Hand, McpHost | None]]]:
    built: list[tuple[Hand, McpHost | None]] = []

    async def capture(
        h: Hand,
        address: str,
        token: str,
        health: str | None,
        tls: ClientTls | None = None,
        mcp: McpHost | None = None,
        replace: bool = False,
        probe_listen: str = "",
    ) -> None:
        built.append((h, mcp))

    monkeypatch.setattr(hand.server, "serve", capture)
    monkeypatch.setenv("TOBE_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("TOBE_HAND_TOKEN", "secret")
    monkeypatch.setenv("TOBE_HAND__ALLOWED_COMMANDS", "[]")
    result = CliRunner().invoke(main, ["hand", "serve", *options])
    return result.exit_code, result.output, built


def _file(tmp_path: Path, config: object) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    return str(path)


REMOTE = {"name": "tracker-box", "mcpServers": {"tracker": {"url": "http://127.0.0.1:1/mcp"}}}


def test_a_bad_mcp_file_stops_the_hand_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = _file(tmp_path, {"mcpServers": {"files": {"command": "x", "effect": "huge"}}})
    status, output, built = _serve(monkeypatch, tmp_path, "--mcp", bad)
    assert status == 1 and built == []
    assert output.startswith("Error: MCP servers file ")
    assert "server 'files', key effect:" in output and output.count("\n") == 1


def test_a_missing_server_program_stops_the_hand_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = _file(tmp_path, {"mcpServers": {"notes": {"command": "no-such-mcp-server"}}})
    status, output, built = _serve(monkeypatch, tmp_path, "--name", "notes", "--mcp", missing)
    assert status == 1 and built == []
    assert output.startswith("Error: MCP server notes: program 'no-such-mcp-server' not found")
    assert output.count("\n") == 1


def test_without_a_workspace_the_hand_offers_only_mcp_tools(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    status, output, built = _serve(monkeypatch, tmp_path, "--mcp", _file(tmp_path, REMOTE))
    assert status == 0, output
    [(served, mcp)] = built
    assert mcp is not None and mcp.hand is served
    assert served.tools == {} and list(mcp.sessions) == ["tracker"]


def test_with_a_workspace_the_mcp_tools_join_the_reference_tools(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options = ("--workspace", str(tmp_path), "--mcp", _file(tmp_path, REMOTE))
    status, output, built = _serve(monkeypatch, tmp_path, *options)
    assert status == 0, output
    [(served, mcp)] = built
    assert mcp is not None and mcp.hand is served and "read_file" in served.tools


def test_a_read_only_mcp_hand_rejects_tools_that_are_not_read_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options = ("--read-only", "--mcp", _file(tmp_path, REMOTE))
    status, output, built = _serve(monkeypatch, tmp_path, *options)
    assert status == 0, output
    [(served, _)] = built
    assert served.policy is not None
    served.tools["tracker__write"] = hand.SchemaTool(
        "tracker__write", "", hand.Effect.EXTERNAL_SIDE_EFFECT, {"type": "object"}, _unused
    )
    offer = hand.Offer("t_1", 1, "tracker__write", {}, "k", "")
    assert "read-only" in (served.policy(offer) or "")


async def _unused(arguments: dict[str, object]) -> str:
    raise AssertionError("not called")


def test_without_name_an_mcp_hand_takes_the_name_its_file_gives(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    status, output, built = _serve(monkeypatch, tmp_path, "--mcp", _file(tmp_path, REMOTE))
    assert status == 0, output
    [(served, _)] = built
    assert served.name == "tracker-box"


def test_name_given_on_the_command_line_wins_over_the_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options = ("--name", "laptop", "--mcp", _file(tmp_path, REMOTE))
    status, output, built = _serve(monkeypatch, tmp_path, *options)
    assert status == 0, output
    [(served, _)] = built
    assert served.name == "laptop"


def test_an_mcp_hand_named_nowhere_is_refused_in_one_line_instead_of_becoming_local(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    nameless = _file(tmp_path, {"mcpServers": REMOTE["mcpServers"]})
    status, output, built = _serve(
        monkeypatch, tmp_path, "--workspace", str(tmp_path), "--mcp", nameless
    )
    assert status == 1 and built == []
    expected = f'pass --name NAME or add a top-level "name" to {nameless}'
    assert output == f"Error: this Hand needs a name: {expected}\n"


def test_a_name_in_the_file_that_no_hand_may_have_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = _file(tmp_path, {**REMOTE, "name": "Tracker Box"})
    status, output, built = _serve(monkeypatch, tmp_path, "--mcp", bad)
    assert status == 1 and built == []
    assert output.startswith(f"Error: MCP servers file {bad}: key name: ")
    assert output.count("\n") == 1
