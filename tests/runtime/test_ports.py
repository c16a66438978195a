"""Whether a listen address can be bound, who holds it, and which published services are real."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tobe.runtime.addresses import published
from tobe.runtime.ports import accepts_connections, bind_problem, holder, running_services


@pytest.fixture
def held() -> Iterator[str]:
    """The address of a listening socket this process holds."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_a_held_port_is_in_use_and_its_holder_is_named_by_pid(held: str, tmp_path: Path) -> None:
    assert bind_problem(held) == "the address is in use"
    assert holder(tmp_path, held).startswith(f"{psutil.Process().name()} (pid {os.getpid()}: ")
    assert accepts_connections(held)


def test_a_free_port_port_zero_and_unix_sockets_can_be_bound(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = f"127.0.0.1:{probe.getsockname()[1]}"
    assert bind_problem(free) is None
    assert not accepts_connections(free)
    assert bind_problem("127.0.0.1:0") is None
    assert bind_problem(f"unix:{tmp_path / 's.sock'}") is None


def test_an_address_of_another_machine_is_not_available(tmp_path: Path) -> None:
    problem = bind_problem("192.0.2.1:7420")
    assert problem is not None and problem.startswith("the address is not available")


def test_a_stale_entry_whose_pid_now_belongs_to_another_program_is_not_a_service(
    tmp_path: Path,
) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        entry = {"address": "127.0.0.1:7420", "pid": other.pid, "ca_file": ""}
        (tmp_path / "runtime.json").write_text(json.dumps({"services": {"face": entry}}))
        assert set(published(tmp_path)) == {"face"}
        assert running_services(tmp_path) == {}
    finally:
        other.kill()
        other.wait()
