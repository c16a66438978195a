"""`tobe up` where bubblewrap cannot run: it starts, its local Hand offers no `run_command`,
and `--allow-unconfined-commands` gives it back with a warning."""

from __future__ import annotations

import signal
from pathlib import Path

import pexpect
import pytest
from helpers.up_process import printed, spawn, up_env

pytestmark = pytest.mark.e2e

# What bubblewrap prints on a kernel without unprivileged user namespaces.
NO_NAMESPACES = "bwrap: No permissions to creating new namespace"
# Each run answers only when the model was offered the tools it expects.
SCRIPT = """\
runs:
  - match: "withheld"
    steps:
      - expect: {tools_include: [local__list_files], tools_exclude: [local__run_command]}
        text: "run_command is not offered"
  - match: "given back"
    steps:
      - expect: {tools_include: [local__list_files, local__run_command]}
        text: "run_command is offered"
"""


def _broken_bwrap(directory: Path) -> Path:
    """A bwrap that fails as it does where user namespaces are off (a hardened kernel, most
    containers), named by `hand.bwrap`: the same probe the Hand runs finds it unusable."""
    program = directory / "bwrap"
    program.write_text(f"#!/bin/sh\necho '{NO_NAMESPACES}' >&2\nexit 1\n")
    program.chmod(0o755)
    return program


def _ask(env: dict[str, str], text: str, answer: str) -> None:
    chat = spawn(["chat"], env)
    try:
        chat.expect("you› ")
        chat.sendline(text)
        chat.expect_exact(answer)
        chat.expect("you› ")
        chat.sendline("/quit")
        chat.expect(pexpect.EOF, timeout=30)
    finally:
        chat.close(force=True)


def _stop(up: pexpect.spawn) -> None:
    up.kill(signal.SIGINT)
    up.expect(pexpect.EOF, timeout=60)
    up.close()
    assert up.exitstatus == 0, printed(up)


def test_without_a_sandbox_up_withholds_run_command_and_the_flag_gives_it_back(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    env = up_env(tmp_path / "data")
    env.update(
        TOBE_HAND__BWRAP=str(_broken_bwrap(tmp_path)),
        TOBE_PROVIDER__KIND="scripted",
        TOBE_PROVIDER__SCRIPT=str(script),
        # Ordinary chat is offered every tool of the conversation, not only read-only ones.
        TOBE_ACTIONS__ENABLED="false",
    )

    up = spawn(["up"], env)
    try:
        up.expect("ToBe is up.")
        up.expect_exact(
            f"Commands: run_command is withheld from the model: bubblewrap cannot run here "
            f"({env['TOBE_HAND__BWRAP']} cannot create the sandbox: {NO_NAMESPACES}); to run "
            "them: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) with user "
            "namespaces enabled, or run `tobe up --allow-unconfined-commands`"
        )
        up.expect("Press Ctrl-C")
        _ask(env, "is it withheld?", "run_command is not offered")
        _stop(up)
    finally:
        up.close(force=True)
    assert "UNCONFINED" not in printed(up)

    up = spawn(["up", "--allow-unconfined-commands"], env)
    try:
        up.expect("ToBe is up.")
        up.expect_exact(
            "Warning: the local Hand's commands run UNCONFINED (--allow-unconfined-commands): "
            "they can read and change anything this user can (no sandbox: "
        )
        up.expect("Press Ctrl-C")
        _ask(env, "is it given back?", "run_command is offered")
        _stop(up)
    finally:
        up.close(force=True)
    assert "withheld" not in printed(up)
