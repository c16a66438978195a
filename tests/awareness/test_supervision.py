"""Adapters are supervised: failures are shown, restarted with backoff, and stay their own.

One Awareness process hosts three instances of the `flaky` test adapter (`flaky`,
`flaky@hang`, `flaky@steady`), each driven through control files in its own `data/`; the
supervisor's timeouts are set short so a hanging start fails within a second.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import datetime

import pytest
from awareness_harness import HERE, AwarenessProcess, Client, add_adapter, new_process
from helpers.eventually import eventually_async

from tobe.v1 import awareness_pb2 as pb

FLAKY = HERE / "adapters" / "flaky"
INSTANCES = ("flaky", "flaky@hang", "flaky@steady")


@pytest.fixture(scope="module")
def supervised() -> Iterator[AwarenessProcess]:
    with new_process() as proc:
        add_adapter(proc.adapters_dir, FLAKY)
        proc.extra_env.update(
            TOBE_AWARENESS__START_TIMEOUT="1",
            TOBE_AWARENESS__STOP_TIMEOUT="1",
            TOBE_AWARENESS__RESTART_MAX_DELAY="4",
        )
        for instance in INSTANCES[1:]:
            proc.write_config(instance, {"auto_start": True})
        _control(proc, "flaky@hang", "hang_start")
        proc.start()
        yield proc


@pytest.fixture
async def sup_client(supervised: AwarenessProcess) -> AsyncIterator[Client]:
    client = Client(supervised.target)
    try:
        yield client
    finally:
        await client.close()


async def _info(client: Client, instance: str) -> pb.AdapterInfo:
    [info] = [a for a in await client.adapters() if a.instance == instance]
    return info


async def _state(client: Client, instance: str, state: str, **more: object) -> pb.AdapterInfo:
    def holds(info: pb.AdapterInfo) -> bool:
        return info.state == state and all(getattr(info, k) == v for k, v in more.items())

    return await eventually_async(
        lambda: _info(client, instance), until=holds, what=f"{instance} {state} {more}"
    )


def _control(proc: AwarenessProcess, instance: str, name: str) -> None:
    data = proc.instance_dir(instance) / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / name).touch()


async def test_a_crashing_adapter_is_restarted_with_growing_delays_and_reported(
    supervised: AwarenessProcess, sup_client: Client
):
    await _state(sup_client, "flaky", "running")
    delays = []
    for crash in (1, 2):
        _control(supervised, "flaky", "crash")
        failed = await _state(sup_client, "flaky", "failed", restarts=crash - 1)
        assert failed.last_error == "run() failed: ConnectionResetError: connection lost"
        assert not failed.running
        delays.append(
            failed.next_restart_at.ToDatetime().timestamp()
            - failed.state_since.ToDatetime().timestamp()
        )
        running = await _state(sup_client, "flaky", "running", restarts=crash)
        assert running.running and not running.HasField("next_restart_at")
        # The failure stays readable after the restart, until the next one.
        assert running.last_error == failed.last_error
    # 1 s then 2 s, each shortened by at most 10 % of jitter (tobe.runtime.backoff).
    assert 0.9 <= delays[0] < 1.1 and 1.8 <= delays[1] < 2.2


async def test_a_hanging_start_times_out_and_is_retried_until_it_starts(
    supervised: AwarenessProcess, sup_client: Client
):
    failed = await _state(sup_client, "flaky@hang", "failed")
    assert failed.last_error == "start timed out after 1 s"
    (supervised.instance_dir("flaky@hang") / "data" / "hang_start").unlink()
    await _state(sup_client, "flaky@hang", "running")


async def test_instances_of_one_adapter_have_their_own_ids_and_data(
    supervised: AwarenessProcess, sup_client: Client
):
    infos = {a.instance: a for a in await sup_client.adapters()}
    assert set(INSTANCES) <= set(infos)
    assert len({infos[i].adapter_id for i in INSTANCES}) == 3
    assert infos["flaky@steady"].adapter_id.startswith("flaky@steady-")
    steady = await sup_client.observe(infos["flaky@steady"].adapter_id, "starts")
    plain = await sup_client.observe(infos["flaky"].adapter_id, "starts")
    # Each instance counts only its own starts, in its own data/.
    assert len(steady["result"]) == 1
    assert len(plain["result"]) >= 1


async def test_a_second_registration_of_an_instance_is_refused(sup_client: Client):
    existing = (await _info(sup_client, "flaky@steady")).adapter_id
    result = json.loads((await sup_client.register("flaky@steady")).content_json)
    assert result["status"] == "error"
    assert result["error"] == (
        f"adapter flaky@steady is registered already as {existing}; "
        "unregister it first to load it again"
    )
    assert [a.adapter_id for a in await sup_client.adapters() if a.instance == "flaky@steady"] == [
        existing
    ]


async def test_a_failure_reported_from_a_thread_restarts_the_adapter_alone(sup_client: Client):
    steady = await _state(sup_client, "flaky@steady", "running", restarts=0)
    reported = await sup_client.interact(steady.adapter_id, "report")
    assert reported["status"] == "success"
    failed = await _state(sup_client, "flaky@steady", "failed")
    assert failed.last_error == "reported failure: the session expired"
    others = await sup_client.observe((await _info(sup_client, "flaky")).adapter_id, "starts")
    assert others["status"] == "success"
    await _state(sup_client, "flaky@steady", "running", restarts=1)


async def test_an_unregistered_adapter_is_stopped_and_a_failing_start_is_retried(
    supervised: AwarenessProcess, sup_client: Client
):
    instance = "flaky@later"
    supervised.write_config(instance, {"auto_start": True})
    _control(supervised, instance, "fail_start")
    result = json.loads((await sup_client.register(instance)).content_json)
    assert result["status"] == "success"
    assert result["adapter"]["state"] == "failed"
    assert result["adapter"]["last_error"] == (
        "start failed: ConnectionRefusedError: cannot reach the service"
    )
    assert datetime.fromisoformat(result["adapter"]["next_restart_at"]) > datetime.fromisoformat(
        result["adapter"]["state_since"]
    )
    (supervised.instance_dir(instance) / "data" / "fail_start").unlink()
    running = await _state(sup_client, instance, "running", restarts=1)
    await sup_client.unregister(running.adapter_id)
    assert instance not in {a.instance for a in await sup_client.adapters()}


async def test_a_hanging_stop_times_out_and_the_adapter_is_removed_anyway(
    supervised: AwarenessProcess, sup_client: Client
):
    instance = "flaky@stuck"
    supervised.write_config(instance, {"auto_start": True})
    _control(supervised, instance, "hang_stop")
    registered = json.loads((await sup_client.register(instance)).content_json)
    assert registered["adapter"]["state"] == "running"
    result = json.loads(
        (await sup_client.unregister(registered["adapter"]["adapter_id"])).content_json
    )
    assert result["status"] == "success"
    assert instance not in {a.instance for a in await sup_client.adapters()}
    assert "stop timed out after 1 s" in supervised.stderr()
