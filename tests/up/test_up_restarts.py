"""`tobe up` restarts a service that fails, on the address it first bound, and leaves one that
keeps failing stopped while the others keep serving."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pexpect
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from helpers.admin_cli import Admin
from helpers.eventually import eventually
from helpers.up_process import chat_once, gone, printed, spawn, up_env

from tobe.runtime.addresses import Published, published

pytestmark = pytest.mark.e2e


def _pids(output: str) -> dict[str, int]:
    """Each service's pid as `tobe up` printed it at the start."""
    return {name: int(pid) for name, pid in re.findall(r"(\w+) +pid (\d+) +log", output)}


def _republished(data_dir: Path, name: str, old: Published) -> Published:
    """The entry a restarted service published in place of `old`."""
    return eventually(
        lambda: published(data_dir).get(name),
        until=lambda entry: entry is not None and entry.pid != old.pid,
        what=f"{name} published by a new process",
    )


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "(gone)"


def _serving(address: str) -> bool:
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=2)  # type: ignore[attr-defined]
        except grpc.RpcError:
            return False
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def _doctor_says(env: dict[str, str], check: str) -> list[str]:
    """`status text` of each line `tobe doctor`, run as a person runs it, prints for `check`."""
    command = [sys.executable, "-m", "tobe", "doctor"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    said = []
    for line in done.stdout.splitlines():
        status, name, text = line.split(None, 2)
        if name == check:
            said.append(f"{status} {text}")
    return said


def _stop(up: pexpect.spawn) -> None:
    up.kill(signal.SIGINT)
    up.expect("Stopping ToBe")
    up.expect(pexpect.EOF, timeout=60)
    up.close()
    assert up.exitstatus == 0, printed(up)


def test_a_killed_face_is_restarted_on_its_ports_and_the_others_keep_their_pids(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    env = up_env(data_dir, listen=False)
    # Every port picked at start (port 0): the restarted Face must come back on the same ones.
    up = spawn(["up", "--port-base", "0"], env)
    try:
        up.expect("ToBe is up.")
        # bubblewrap runs here: the banner says the local Hand's commands are sandboxed.
        up.expect("Commands: +run_command runs in a bubblewrap sandbox that sees only")
        up.expect("Press Ctrl-C")
        started = _pids(printed(up))
        before = published(data_dir)
        assert started["face"] == before["face"].pid

        os.kill(started["face"], signal.SIGKILL)
        up.expect(r"face exited \(killed by SIGKILL\); restarting it in 1 s \(log ")
        face = _republished(data_dir, "face", before["face"])
        web = _republished(data_dir, "web", before["web"])
        assert (face.address, web.address) == (before["face"].address, before["web"].address)

        chat_once(env, "hello again")
        assert printed(up).count("exited (") == 1
        others = {name: pid for name, pid in started.items() if name != "face"}
        assert {name: not gone(pid) for name, pid in others.items()} == dict.fromkeys(others, True)
        now = published(data_dir)
        assert {name: now[name].pid for name in ("mind", "awareness")} == {
            name: started[name] for name in ("mind", "awareness")
        }
        _stop(up)
        assert gone(face.pid)
    finally:
        up.close(force=True)


def test_a_killed_mind_is_restarted_and_face_and_the_hand_reconnect(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = up_env(data_dir, listen=False)
    up = spawn(["up", "--port-base", "0", "--no-web"], env)
    everyone: list[int] = []
    try:
        up.expect("Press Ctrl-C")
        started = _pids(printed(up))
        everyone += started.values()
        before = published(data_dir)

        os.kill(started["mind"], signal.SIGKILL)
        # Its pid is no longer ours to watch: another process may get it.
        everyone.remove(started["mind"])
        up.expect(r"mind exited \(killed by SIGKILL\); restarting it in 1 s")
        mind = _republished(data_dir, "mind", before["mind"])
        everyone.append(mind.pid)
        assert mind.address == before["mind"].address

        # Face reconnects: a chat through it reaches the new Mind.
        chat_once(env, "are you back?")
        # The Hand attaches to the new Mind by itself.
        admin = Admin(data_dir)
        eventually(
            lambda: [hand["name"] for hand in admin.json("status")["hands"]],
            until=lambda names: names == ["local"],
            what="the local Hand attached to the restarted Mind",
        )
        assert [gone(started[name]) for name in ("face", "hand", "awareness")] == [False] * 3

        # The restarted Mind, too, ends with `tobe up` when that is killed.
        up.kill(signal.SIGKILL)
        eventually(
            lambda: [pid for pid in everyone if not gone(pid)],
            until=lambda left: left == [],
            what="every service gone with the killed tobe up",
            context=lambda: str({pid: _command(pid) for pid in everyone if not gone(pid)}),
        )
    finally:
        up.close(force=True)
        for pid in everyone:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_service_that_keeps_failing_is_left_stopped_and_the_rest_keep_serving(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    env = up_env(data_dir, listen=False)
    env["TOBE_UP_RESTART_DELAY"] = "0.2"
    up = spawn(["up", "--port-base", "0", "--no-web"], env)
    squatter = socket.socket()
    try:
        up.expect("Press Ctrl-C")
        started = _pids(printed(up))
        up_pid = up.pid
        assert _doctor_says(env, "services") == [
            f"ok `tobe up` (pid {up_pid}) runs awareness, mind, face, hand"
        ]
        face_address = published(data_dir)["face"].address
        host, port = face_address.rsplit(":", 1)

        # Face dies, and another program takes its port before it is back: every restart fails.
        os.kill(started["face"], signal.SIGKILL)
        eventually(lambda: gone(started["face"]), what="Face gone")

        def bound() -> bool:
            try:
                squatter.bind((host, int(port)))
            except OSError:
                return False
            return True

        eventually(bound, what=f"{face_address} taken by the test")
        squatter.listen()

        log = data_dir / "logs" / "face.log"
        up.expect(
            r"face failed 5 times within 60 s and is left stopped; the other services keep "
            r"running\. Last error: (.+) \(log ([^)]+)\)",
            timeout=90,
        )
        last_error, named_log = up.match.group(1), up.match.group(2)
        assert f"cannot listen on {face_address}" in last_error
        assert named_log == str(log)
        # `tobe doctor` tells it too, while `tobe up` runs.
        assert _doctor_says(env, "services") == [
            f"FAIL face failed 5 times within 60 s and `tobe up` (pid {up_pid}) left it stopped. "
            f"Last error: {last_error} (log {log}) — fix: read {log}, correct the cause, then "
            "restart `tobe up` (Ctrl-C, and start it again)"
        ]
        # Restarted after the kill and after each of three failures, one line each time.
        restarts = re.findall(r"face exited \((.+?)\); restarting it in ([\d.]+) s", printed(up))
        assert restarts == [
            ("killed by SIGKILL", "0.2"),
            ("status 1", "0.4"),
            ("status 1", "0.8"),
            ("status 1", "1.6"),
        ]

        mind = published(data_dir)["mind"]
        assert mind.pid == started["mind"]
        assert _serving(mind.address)
        assert [gone(started[name]) for name in ("mind", "hand", "awareness")] == [False] * 3

        # A service that ends cleanly is not restarted either; doctor names it beside Face.
        os.kill(started["hand"], signal.SIGTERM)
        up.expect(r"hand exited by itself \(status 0\); not restarted")
        [face_line, hand_line] = _doctor_says(env, "services")
        assert face_line.startswith("FAIL face failed 5 times")
        hand_log = data_dir / "logs" / "hand.log"
        assert hand_line.startswith(
            f"FAIL hand exited by itself (status 0) and `tobe up` (pid {up_pid}) left it "
            "stopped. Its last log line: "
        )
        assert hand_line.endswith(
            f" (log {hand_log}) — fix: read {hand_log}, correct the cause, then restart "
            "`tobe up` (Ctrl-C, and start it again)"
        )
        _stop(up)
        idle = f"skip no `tobe up` supervises services on {data_dir}"
        assert _doctor_says(env, "services") == [idle]
    finally:
        squatter.close()
        up.close(force=True)
