"""Push by trust, observed through a real subscriber of a real Awareness process."""

from __future__ import annotations

import json

from awareness_harness import AwarenessProcess, Client, batch_with, next_batch

from tobe.v1 import awareness_pb2 as pb


async def test_high_observation_is_published_at_once_with_full_permissions(shared_client: Client):
    client = shared_client
    probe = await client.adapter_id("probe")
    stream = client.subscribe()
    observation_id = await client.emit(probe, "high", text="door opened")
    batch = await batch_with(stream, observation_id)
    assert [o.id for o in batch.observations] == [observation_id]
    observation = batch.observations[0]
    assert observation.trust == pb.TRUST_HIGH
    assert observation.adapter_name == "probe"
    assert json.loads(observation.content_json) == {"text": "door opened"}
    assert observation.permissions.workspace_write
    stream.cancel()


async def test_three_low_observations_in_the_window_arrive_as_one_batch(shared_client: Client):
    client = shared_client
    probe = await client.adapter_id("probe")
    stream = client.subscribe()
    ids = [await client.emit(probe, "low", n=n) for n in range(3)]
    batch = await batch_with(stream, ids[0])
    assert [o.id for o in batch.observations] == ids
    assert all(o.trust == pb.TRUST_LOW for o in batch.observations)
    # Low trust may reply and retrieve media, never write the workspace.
    permissions = batch.observations[0].permissions
    assert permissions.reply and permissions.retrieval_media
    assert not permissions.workspace_write and not permissions.channel_operations
    stream.cancel()


async def test_low_and_medium_are_aggregated_separately(shared_client: Client):
    client = shared_client
    probe = await client.adapter_id("probe")
    stream = client.subscribe()
    low = await client.emit(probe, "low")
    medium = await client.emit(probe, "medium")
    by_trust: dict[int, list[str]] = {}
    while len(by_trust) < 2:
        batch = await next_batch(stream)
        ids = [o.id for o in batch.observations]
        if low in ids or medium in ids:
            by_trust[batch.observations[0].trust] = ids
    assert by_trust == {pb.TRUST_LOW: [low], pb.TRUST_MEDIUM: [medium]}
    stream.cancel()


async def test_off_observation_is_never_published(shared_client: Client):
    client = shared_client
    probe = await client.adapter_id("probe")
    stream = client.subscribe()
    off = await client.emit(probe, "off", secret_room="kitchen")
    # A low observation emitted after the off one is published a window later; by then the
    # off one would have been published too, had it not been dropped.
    low = await client.emit(probe, "low")
    while True:
        batch = await next_batch(stream)
        ids = [o.id for o in batch.observations]
        assert off not in ids
        if low in ids:
            break
    stream.cancel()


async def test_drain_returns_published_observations_not_yet_read(client: Client):
    probe = await client.adapter_id("probe")
    first = await client.emit(probe, "max")
    second = await client.emit(probe, "high")
    drained = await client.observe("", "drain", limit=10)
    assert [o["id"] for o in drained["observations"]] == [first, second]
    assert drained["observations"][0]["permissions"]["workspace_write"] is True
    again = await client.observe("", "drain")
    assert again == {"status": "success", "observations": []}


async def test_unregister_flushes_the_low_buffer(awareness_dirs: AwarenessProcess):
    # A window far longer than the test: only the unregister can publish the observation.
    awareness_dirs.extra_env["TOBE_AWARENESS__LOW_WINDOW"] = "600"
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    probe = await client.adapter_id("probe")
    stream = client.subscribe()
    pending = await client.emit(probe, "low")
    result = await client.unregister(probe)
    assert json.loads(result.content_json)["status"] == "success"
    # Published by the unregister itself: the window would take ten minutes.
    batch = await next_batch(stream)
    assert [o.id for o in batch.observations] == [pending]
    stream.cancel()
    await client.close()


async def test_engine_call_without_adapter_id_rejects_unknown_action(shared_client: Client):
    client = shared_client
    result = await client.observe("", "explode")
    assert result["status"] == "error"
    assert "list_adapters" in result["error"] and "drain" in result["error"]
