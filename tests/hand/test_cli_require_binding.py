"""`tobe hand serve --require-binding`: the reference Hand it builds refuses an effectful
offer that carries no approval binding."""

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
from tobe.v1 import hand_pb2


def served_hand(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *options: str
) -> tuple[Hand, list[hand_pb2.AttachRequest]]:
    """The Hand `tobe hand serve` would attach, and a list collecting the frames it sends."""
    built: list[Hand] = []

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
        built.append(h)

    monkeypatch.setattr(hand.server, "serve", capture)
    monkeypatch.setenv("TOBE_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("TOBE_HAND_TOKEN", "secret")
    monkeypatch.setenv("TOBE_HAND__ALLOWED_COMMANDS", "[]")
    result = CliRunner().invoke(
        main, ["hand", "serve", "--workspace", str(tmp_path), *options], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    [served] = built
    sent: list[hand_pb2.AttachRequest] = []
    monkeypatch.setattr(served, "_send", lambda frame: sent.append(frame) or True)
    return served, sent


def write_offer() -> hand_pb2.TaskOffer:
    arguments = {"path": "note.txt", "content": "hi"}
    return hand_pb2.TaskOffer(
        task_id="t_1", attempt=1, tool="write_file", arguments_json=json.dumps(arguments)
    )


def test_the_reference_hand_with_require_binding_rejects_an_unbound_write(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    served, sent = served_hand(monkeypatch, tmp_path, "--require-binding")
    served._on_offer(write_offer())
    assert [frame.WhichOneof("frame") for frame in sent] == ["rejected"]
    assert "requires an approval binding" in sent[0].rejected.reason
    assert not (tmp_path / "note.txt").exists()


def test_the_reference_hand_without_the_flag_does_not_require_bindings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    served, _ = served_hand(monkeypatch, tmp_path)
    assert served.require_binding is False
