"""`tobe up` takes a service for ready once its probe answers SERVING and it has published,
from its own process, every address the next wave dials."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from management.up_plan import ServicePlan, probe_address
from management.up_readiness import Ready, readiness
from tobe.config import Settings
from tobe.runtime.addresses import publish
from tobe.runtime.server import start_server


async def ask(plan: ServicePlan, pid: int, data_dir: Path) -> Ready | str:
    return await asyncio.to_thread(readiness, plan, pid, data_dir)


async def test_a_serving_face_is_ready_once_it_published_its_gateway_and_web_client(
    tmp_path: Path,
) -> None:
    plan = ServicePlan("face", "face", f"unix:{tmp_path / 'face-probe.sock'}")
    plan.also_publishes = ("web",)
    server = await start_server([], [], serving=False, probe_listen=plan.probe)
    try:
        await server.set_serving(False, reason="no feed from the Mind yet")
        assert await ask(plan, os.getpid(), tmp_path) == "NOT_SERVING (no feed from the Mind yet)"
        await server.set_serving(True)
        waiting = await ask(plan, os.getpid(), tmp_path)
        assert waiting == "SERVING, but has not published face, web in runtime.json yet"
        publish(tmp_path, "face", "127.0.0.1:7420")
        publish(tmp_path, "web", "127.0.0.1:7421")
        # Another process's entries (a Face of an earlier start) are not this one's.
        assert await ask(plan, os.getppid(), tmp_path) == waiting
        ready = Ready("127.0.0.1:7420", {"web": "127.0.0.1:7421"})
        assert await ask(plan, os.getpid(), tmp_path) == ready
    finally:
        await server.stop(0.1)


async def test_a_hand_is_ready_once_serving_as_it_publishes_no_address(tmp_path: Path) -> None:
    plan = ServicePlan("hand", "hand", f"unix:{tmp_path / 'hand-probe.sock'}", publishes=False)
    assert (await ask(plan, os.getpid(), tmp_path)).startswith("UNREACHABLE (")
    server = await start_server([], [], serving=True, probe_listen=plan.probe)
    try:
        assert await ask(plan, os.getpid(), tmp_path) == Ready("")
    finally:
        await server.stop(0.1)


def test_a_configured_probe_address_is_read_there_unless_it_picks_a_free_port(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path)
    assert probe_address(settings, "mind") == f"unix:{tmp_path.resolve() / 'mind-probe.sock'}"
    settings.mind.probe_listen = "127.0.0.1:7419"
    assert probe_address(settings, "mind") == "127.0.0.1:7419"
    settings.mind.probe_listen = "127.0.0.1:0"
    assert probe_address(settings, "mind") == f"unix:{tmp_path.resolve() / 'mind-probe.sock'}"
