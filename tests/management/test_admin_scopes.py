"""`tobe admin credentials create` accepts only the documented scopes (`tobe.scopes`): an
unknown one ends the real `tobe` command with one line listing the valid ones and creates
nothing, whether the running Mind answers or the command opens the store itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from admin_mind import mind_running
from helpers import store_backend
from helpers.eventually import eventually

from tobe.scopes import valid_scopes

pytestmark = pytest.mark.e2e

REFUSAL = f"unknown scope 'chta'; valid scopes: {valid_scopes()}"


def create_with_a_typo(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """The real `tobe admin credentials create … --scope chat --scope chta`."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("TOBE_")}
    env.update(TOBE_DATA_DIR=str(data_dir), TOBE_CONFIG=str(data_dir / "absent.toml"))
    env.update(store_backend.environment(data_dir))
    command = ["admin", "credentials", "create", "--kind", "client", "--principal", "ann"]
    return subprocess.run(
        [sys.executable, "-m", "tobe", *command, "--scope", "chat", "--scope", "chta"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def stored_rows(data_dir: Path) -> tuple[int, int]:
    """Credentials and management audit rows in the store."""
    with store_backend.connect(store_backend.database_url(data_dir)) as db:
        credentials = db.execute("SELECT count(*) FROM credentials").fetchall()[0][0]
        audit = db.execute("SELECT count(*) FROM management_audit").fetchall()[0][0]
    return credentials, audit


def assert_one_line_refusal(done: subprocess.CompletedProcess[str]) -> None:
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"Error: {REFUSAL}\n")


def test_a_typo_in_a_scope_is_refused_with_the_valid_ones_with_the_mind_stopped(
    data_dir: Path,
) -> None:
    assert_one_line_refusal(create_with_a_typo(data_dir))
    assert stored_rows(data_dir) == (0, 0)


def test_a_typo_in_a_scope_is_refused_with_the_valid_ones_by_the_running_mind(
    data_dir: Path,
) -> None:
    with mind_running(data_dir) as mind:
        assert_one_line_refusal(create_with_a_typo(data_dir))
        # The running Mind's Management servicer answered, not an offline store.
        eventually(
            lambda: any(REFUSAL in line for line in mind.output),
            what="the Mind logging its refusal of the credential",
        )
        assert stored_rows(data_dir) == (0, 0)
