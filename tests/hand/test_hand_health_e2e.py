"""`tobe hand serve --health-listen`: SERVING exactly while the Hand is attached to its Mind,
NOT_SERVING with how its stream ended while it is not."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from helpers.eventually import eventually_async
from helpers.mind_process import MindProcess, issue_token, running_mind
from helpers.ports import free_port

from tobe.runtime.health import check, check_reason, wait_serving

pytestmark = pytest.mark.e2e
DEADLINE = 60.0


@pytest.fixture
def mind(tmp_path: Path) -> Iterator[MindProcess]:
    with running_mind(tmp_path, script=None, clients=()) as process:
        yield process


@pytest.fixture
def hand(tmp_path: Path, mind: MindProcess) -> Iterator[str]:
    """A reference Hand with a health endpoint; yields that endpoint's address."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    health = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(
        TOBE_CONFIG=str(tmp_path / "absent-config.toml"),
        TOBE_DATA_DIR=str(tmp_path / "hand-data"),
        TOBE_HAND_TOKEN=issue_token(mind.url, kind="hand", principal="box", scopes=[]),
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tobe",
            "hand",
            "serve",
            "--mind",
            mind.address,
            "--name",
            "box",
            "--workspace",
            str(workspace),
            "--health-listen",
            health,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield health
    finally:
        process.kill()
        process.wait(10)


async def status(target: str) -> str:
    try:
        return await check(target, timeout=2.0)
    except grpc.aio.AioRpcError as exc:
        return exc.code().name


async def wait_status(target: str, wanted: str) -> None:
    """Poll the health endpoint until it reports `wanted` (it must keep answering meanwhile)."""
    await eventually_async(
        lambda: status(target),
        DEADLINE,
        until=lambda seen: seen == wanted,
        what=f"{target} to report {wanted}",
        interval=0.1,
    )


async def test_health_follows_the_link_to_the_mind(mind: MindProcess, hand: str) -> None:
    await wait_serving(hand, deadline=DEADLINE)

    mind.kill()
    await wait_status(hand, "NOT_SERVING")
    # How its stream ended: "disconnected from the Mind at …", then each failed attempt's.
    await eventually_async(
        lambda: check_reason(hand, timeout=2.0),
        DEADLINE,
        until=lambda seen: (
            seen[0] == "NOT_SERVING" and "the Mind" in seen[1] and "UNAVAILABLE" in seen[1]
        ),
        what="the Hand's health to say why it is detached",
    )

    mind.start(mind.address)
    await wait_status(hand, "SERVING")
    assert await check_reason(hand, timeout=2.0) == ("SERVING", "")


def test_a_health_address_in_use_is_refused_with_a_message(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOBE_")}
    env.update(TOBE_CONFIG=str(tmp_path / "absent.toml"), TOBE_HAND_TOKEN="unused")
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = f"127.0.0.1:{squatter.getsockname()[1]}"
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "tobe",
                "hand",
                "serve",
                "--mind",
                "127.0.0.1:9",
                "--workspace",
                str(workspace),
                "--health-listen",
                taken,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert f"Error: cannot serve health on {taken}" in result.stderr
    assert "Traceback" not in result.stderr
