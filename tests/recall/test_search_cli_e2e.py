"""`tobe search` through a real Face and Mind: the person's matching conversations with a
snippet, never another person's, and a query without words refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.eventually import eventually
from helpers.face_process import FaceProcess, running_face
from helpers.mind_gateway import Gateway, ended_runs
from helpers.mind_process import MindProcess, running_mind

pytestmark = pytest.mark.e2e


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    script = tmp_path / "script.yaml"
    script.write_text('runs:\n  - match: ".*"\n    steps: [{text: "Noted."}]\n')
    with running_mind(tmp_path, script=script) as process:
        yield process


@pytest.fixture
def face(mind: MindProcess) -> Iterator[FaceProcess]:
    with running_face(mind, web=False) as process:
        yield process


def _search(face: FaceProcess, token: str, *query: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env["TOBE_CONFIG"] = "/nonexistent/tobe.toml"
    return subprocess.run(
        [sys.executable, "-m", "tobe", "search", *query, "--address", face.address],
        env=env | {"TOBE_CHAT_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_tobe_search_prints_the_persons_matches_with_snippets(
    mind: MindProcess, face: FaceProcess
) -> None:
    gateway = Gateway.connect(mind)
    try:
        keys = {}
        for who in ("alice", "bob"):
            keys[who] = gateway.create(f"p_{uuid.uuid4().hex[:12]}", principal=who)
            start = gateway.head()
            sent = gateway.send(
                keys[who], f"{who} walked the heron trail", uuid.uuid4().hex, principal=who
            )
            gateway.wait_for(start, lambda events, r=sent.run_id: r in ended_runs(events))
    finally:
        gateway.close()

    found = eventually(
        lambda: _search(face, mind.client_tokens["alice"], "heron", "trail"),
        until=lambda result: keys["alice"] in result.stdout,
        what="alice's conversation printed",
    )
    assert found.returncode == 0, found.stderr
    assert "alice walked the heron trail" in found.stdout
    assert keys["bob"] not in found.stdout and "bob walked" not in found.stdout

    refused = _search(face, mind.client_tokens["alice"], "?!")
    assert refused.returncode == 1
    assert "no word to search for" in refused.stderr and len(refused.stderr.splitlines()) == 1
