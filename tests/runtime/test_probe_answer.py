"""A server's probe answer: its overall health status in one plain line, until it stops."""

from __future__ import annotations

import asyncio
import socket
import stat
from pathlib import Path

import pytest

from tobe.runtime.probe_answer import read_answer
from tobe.runtime.server import BindError, start_server


async def answer(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        return await reader.read()
    finally:
        writer.close()


async def test_the_probe_answers_what_the_server_last_set_and_closes_with_it() -> None:
    server = await start_server([], [], serving=False, probe_listen="127.0.0.1:0")
    assert server.probe is not None
    port = server.probe.port
    assert await answer(port) == b"NOT_SERVING\n"
    await server.set_serving(True)
    assert await answer(port) == b"SERVING\n"

    await server.stop(0.1)
    with pytest.raises(ConnectionRefusedError):
        await answer(port)


async def test_a_probe_address_that_is_neither_host_and_port_nor_a_socket_is_refused() -> None:
    with pytest.raises(BindError) as refused:
        await start_server([], ["127.0.0.1:0"], probe_listen="localhost")
    assert refused.value.setting == "probe_listen"
    assert refused.value.reason == "give it as host:port, e.g. 127.0.0.1:7419, or unix:/path"


async def test_a_socket_file_probe_is_owner_only_and_read_with_the_reason_it_is_not_serving(
    tmp_path: Path,
) -> None:
    socket_file = tmp_path / "mind-probe.sock"
    with socket.socket(socket.AF_UNIX) as killed:  # its socket file stays, as a kill leaves it
        killed.bind(str(socket_file))
    server = await start_server([], [], serving=False, probe_listen=f"unix:{socket_file}")
    try:
        assert stat.S_IMODE(socket_file.stat().st_mode) == 0o600
        await server.set_serving(False, reason="the store is being migrated")
        read = asyncio.to_thread(read_answer, f"unix:{socket_file}", 1.0)
        assert await read == "NOT_SERVING (the store is being migrated)"
        await server.set_serving(True)
        assert await asyncio.to_thread(read_answer, f"unix:{socket_file}", 1.0) == "SERVING"
    finally:
        await server.stop(0.1)
    assert read_answer(f"unix:{socket_file}", 1.0).startswith("UNREACHABLE (")
