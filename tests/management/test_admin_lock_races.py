"""The Mind and an offline CLI never share the data directory, and neither hangs.

Real processes: `tobe mind serve` and the `tobe` CLI; the offline side holds the lock through
the very code path the CLI uses (`management.connection.connect`).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path

import pytest
from admin_mind import mind_running
from helpers.admin_cli import Admin
from helpers.mind_process import MindProcess, mind_env, run_mind_command

from management.connection import connect
from tobe.config import Settings
from tobe.v1 import management_pb2

pytestmark = pytest.mark.e2e

TOBE = Path(sys.executable).with_name("tobe")


async def test_mind_started_while_an_offline_cli_holds_the_lock_refuses_clearly(
    admin: Admin,
) -> None:
    settings = Settings(data_dir=admin.data_dir, database_url=admin.store_url)
    async with connect(settings) as connection:
        assert connection.mode == "offline"
        env = mind_env(admin.data_dir, None, TOBE_MIND__LOCK_TIMEOUT="0.5")
        started = await asyncio.to_thread(run_mind_command, env)
    assert started.returncode != 0
    assert "tobe admin (offline)" in started.stderr
    assert "waited 0.5 s for the state lock" in started.stderr
    assert "Traceback" not in started.stderr


async def test_mind_waits_for_an_offline_cli_and_then_serves_what_it_wrote(
    admin: Admin,
) -> None:
    settings = Settings(data_dir=admin.data_dir, database_url=admin.store_url)
    mind = MindProcess(admin.data_dir, mind_env(admin.data_dir, None), "", {})
    try:
        async with connect(settings) as connection:
            starting = asyncio.create_task(asyncio.to_thread(mind.start))
            created = await connection.stub.CreateCredential(
                management_pb2.CreateCredentialRequest(
                    kind=management_pb2.CREDENTIAL_KIND_HAND, principal="written-offline"
                )
            )
            assert not mind.address  # it cannot be serving while the CLI holds the lock
        await starting
        listed = await asyncio.to_thread(admin.json, "--verbose", "credentials", "list")
        assert [c["id"] for c in listed] == [created.credential.id]
    finally:
        mind.kill()


def test_cli_racing_a_starting_mind_ends_cleanly(admin: Admin) -> None:
    """Whichever wins the lock, the CLI answers (offline first, or online once ready) and the
    Mind starts (at once, or after the CLI released the lock)."""
    mind = MindProcess(admin.data_dir, mind_env(admin.data_dir, None), "", {})
    starting = threading.Thread(target=mind.start)
    try:
        starting.start()
        result = admin.run("--verbose", "--wait", "30", "status")
        starting.join(60)
        assert mind.address, "\n".join(mind.output)
    finally:
        mind.kill()
    assert "mode: online" in result.stderr or "mode: offline" in result.stderr


def test_killed_mind_leaves_a_stale_socket_and_the_cli_goes_offline(admin: Admin) -> None:
    with mind_running(admin.data_dir) as mind:
        assert "mode: online" in admin.run("--verbose", "status").stderr
        admin.run("credentials", "create", "--kind", "client", "--principal", "a")
        mind.kill()  # SIGKILL: no cleanup, the socket file stays behind with nothing behind it
        assert (admin.data_dir / "mind.sock").exists()
        result = admin.run("--verbose", "credentials", "list", "--json")
    assert "mode: offline" in result.stderr
    assert [c["principal"] for c in json.loads(result.stdout)] == ["a"]
    assert not (admin.data_dir / "mind.sock").exists()
