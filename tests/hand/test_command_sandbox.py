"""`run_command` runs in a bubblewrap sandbox: real bwrap, real files, real sockets."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.eventually import eventually_async

from hand import sandbox
from hand.reference import build_reference_hand
from hand.sandbox import Sandbox, Unconfined
from hand.started_command import start_command

SECRET = "the-secret-value-42"


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with symlinks to a secret file (and its directory) kept outside it."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (workspace / "notes.txt").write_text("a note\n")
    os.symlink(outside / "secret.txt", workspace / "link")
    os.symlink(outside, workspace / "linked_dir")
    return workspace, outside


async def run(workspace: Path, argv: list[str], **options: object) -> dict:
    hand = build_reference_hand(
        "box",
        workspace,
        allowed_commands=[argv[0]],
        **options,  # type: ignore[arg-type]
    )
    return json.loads((await hand.tools["run_command"].call({"argv": argv})).text)


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["cat", "link"], id="symlink-in-the-workspace"),
        pytest.param(["grep", "-R", "secret-value", "."], id="grep-R-over-a-symlinked-dir"),
        pytest.param(["wc", "--files0-from=../outside/secret.txt"], id="option-hiding-a-path"),
        pytest.param(["python3", "-c", "print(open({secret!r}).read())"], id="python3-c"),
    ],
)
async def test_a_sandboxed_command_cannot_read_a_file_outside_the_workspace(
    places: tuple[Path, Path], argv: list[str]
) -> None:
    workspace, outside = places
    argv = [part.format(secret=str(outside / "secret.txt")) for part in argv]
    result = await run(workspace, argv)
    assert SECRET not in result["stdout"] + result["stderr"], result
    assert result["exit_code"] != 0, result


async def test_a_sandboxed_command_writes_inside_the_workspace_and_nowhere_else(
    places: tuple[Path, Path],
) -> None:
    workspace, outside = places
    code = (
        "open('made.txt', 'w').write('made here')\n"
        f"try: open({str(outside / 'planted.txt')!r}, 'w').write('x')\n"
        "except OSError as e: print('refused:', e.strerror)\n"
    )
    result = await run(workspace, ["python3", "-c", code])
    assert result["exit_code"] == 0, result
    assert (workspace / "made.txt").read_text() == "made here"
    assert result["stdout"].startswith("refused:")
    assert not (outside / "planted.txt").exists()


@pytest.mark.parametrize(
    "options", [{}, {"confinement": Unconfined()}], ids=["sandboxed", "unconfined"]
)
async def test_a_command_never_sees_the_hands_settings_or_credential(
    places: tuple[Path, Path], options: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, _ = places
    monkeypatch.setenv("TOBE_HAND_TOKEN", "tobe_0123_credential-value")
    monkeypatch.setenv("TOBE_HAND__WORKSPACE", str(workspace))
    code = "import os; print(sorted(os.environ.items()))"
    result = await run(workspace, ["python3", "-c", code], **options)
    assert result["exit_code"] == 0, result
    assert "credential-value" not in result["stdout"] and "TOBE_" not in result["stdout"]


@pytest.fixture
def listener() -> Iterator[int]:
    """A listening TCP port on the host's loopback."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def connect_code(port: int) -> str:
    return (
        "import socket\n"
        f"try: socket.create_connection(('127.0.0.1', {port}), 5); print('connected')\n"
        "except OSError as e: print('no network:', e)\n"
    )


async def test_a_sandboxed_command_has_no_network_by_default(
    places: tuple[Path, Path], listener: int
) -> None:
    workspace, _ = places
    result = await run(workspace, ["python3", "-c", connect_code(listener)])
    assert result["stdout"].startswith("no network:"), result


async def test_a_sandbox_configured_with_network_reaches_the_host(
    places: tuple[Path, Path], listener: int
) -> None:
    workspace, _ = places
    result = await run(
        workspace,
        ["python3", "-c", connect_code(listener)],
        confinement=Sandbox(allow_network=True),
    )
    assert result["stdout"] == "connected\n", result


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("ending", ["timeout", "cancel"])
async def test_ending_a_sandboxed_command_kills_every_process_it_started(
    places: tuple[Path, Path], ending: str
) -> None:
    workspace, _ = places
    marker = f"9000.{uuid.uuid4().int % 10**9}"  # a unique `sleep` duration to find the child
    code = f"import subprocess, time; subprocess.Popen(['sleep', '{marker}']); time.sleep(900)"
    hand = build_reference_hand(
        "box", workspace, allowed_commands=["python3"], command_timeout=10.0
    )
    call = asyncio.create_task(hand.tools["run_command"].call({"argv": ["python3", "-c", code]}))
    await eventually_async(
        lambda: processes_with(marker), 60, what="the command to start its child"
    )
    if ending == "cancel":
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    else:
        assert json.loads((await call).text)["timed_out"]
    await eventually_async(
        lambda: processes_with(marker),
        60,
        until=lambda pids: not pids,
        what="every process of the command to end",
    )


async def test_a_command_cancelled_while_it_starts_is_killed_once_started(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The program runs as soon as it is forked; the spawn's coroutine resumes later. A cancel
    # in between must not leave the command running with nobody to end it.
    workspace, _ = places
    marker = f"9000.{uuid.uuid4().int % 10**9}"
    code = f"import subprocess, time; subprocess.Popen(['sleep', '{marker}']); time.sleep(900)"
    forked, resume = asyncio.Event(), asyncio.Event()
    spawn = asyncio.create_subprocess_exec

    async def slow_to_resume(*argv: str, **options: object) -> asyncio.subprocess.Process:
        process = await spawn(*argv, **options)  # type: ignore[arg-type]
        forked.set()
        await resume.wait()
        return process

    monkeypatch.setattr(asyncio, "create_subprocess_exec", slow_to_resume)
    hand = build_reference_hand("box", workspace, allowed_commands=["python3"])
    call = asyncio.create_task(hand.tools["run_command"].call({"argv": ["python3", "-c", code]}))
    await asyncio.wait_for(forked.wait(), 60)
    await eventually_async(
        lambda: processes_with(marker), 60, what="the command to start its child"
    )
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    resume.set()
    await eventually_async(
        lambda: processes_with(marker),
        60,
        until=lambda pids: not pids,
        what="every process of the command to end",
    )


async def test_killing_the_sandboxs_first_process_ends_every_process_in_it(
    places: tuple[Path, Path],
) -> None:
    # What ending a command relies on, whatever becomes of bwrap itself: bwrap reports the
    # sandbox's first process, and the PID namespace ends with it.
    workspace, _ = places
    marker = f"9000.{uuid.uuid4().int % 10**9}"
    code = f"import subprocess, time; subprocess.Popen(['sleep', '{marker}']); time.sleep(900)"
    launch = Sandbox().launch(["python3", "-c", code], workspace, workspace, report=True)
    started = await start_command(launch, workspace)
    try:
        assert started.sandbox_pid is not None
        namespace = Path(f"/proc/{started.sandbox_pid}/ns/pid").readlink()
        assert namespace != Path("/proc/self/ns/pid").readlink()  # the sandbox's own
        await eventually_async(lambda: processes_with(marker), 60, what="the command's child")
        os.kill(started.sandbox_pid, signal.SIGKILL)
        await eventually_async(
            lambda: processes_with(marker),
            60,
            until=lambda pids: not pids,
            what="every process in the sandbox to end",
        )
    finally:
        started.kill()
        await started.process.wait()


def test_a_system_without_programs_where_the_sandbox_looks_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As on Nix or Guix: bubblewrap runs, but /usr/bin and /bin hold no programs.
    monkeypatch.setattr(sandbox, "SANDBOX_PATH", str(tmp_path / "empty"))
    problem = Sandbox().probe(tmp_path)
    assert problem is not None
    assert problem.startswith(f"this system keeps no programs where the sandbox looks ({tmp_path}")


@pytest.mark.parametrize(
    ("script", "exit_code"),
    [
        pytest.param("exit 3", 3, id="exit-code"),
        pytest.param("kill -TERM $$", -signal.SIGTERM, id="killed-by-a-signal"),
    ],
)
async def test_a_command_ends_for_the_hand_as_it_ended_itself(
    places: tuple[Path, Path], script: str, exit_code: int
) -> None:
    # What stands between the Hand and a command (`hand.command_guard`) passes its end on.
    workspace, _ = places
    result = await run(workspace, ["sh", "-c", script], confinement=Unconfined())
    assert result["exit_code"] == exit_code, result
