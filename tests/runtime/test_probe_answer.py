"""A server's probe answer: its overall health status in one plain line, until it stops."""

from __future__ import annotations

import asyncio

import pytest

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


async def test_a_probe_address_that_is_not_host_and_port_is_refused_before_serving() -> None:
    with pytest.raises(BindError) as refused:
        await start_server([], ["127.0.0.1:0"], probe_listen="unix:/tmp/probe.sock")
    assert refused.value.setting == "probe_listen"
    assert refused.value.reason == "give it as host:port, e.g. 127.0.0.1:7419"
