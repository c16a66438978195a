"""Durable publish: nothing published is lost or repeated across kills and restarts."""

from __future__ import annotations

import json
import signal

import grpc
import httpx
import pytest
from awareness_harness import BUILTIN, AwarenessProcess, Client, add_adapter, next_batch

WEBHOOK_SECRET = "webhook-secret-3d8f61c2aa"


async def _collect(client: Client, after_seq: int, count: int) -> list[tuple[int, str]]:
    stream = client.subscribe(after_seq)
    seen: list[tuple[int, str]] = []
    while len(seen) < count:
        batch = await next_batch(stream)
        seen += [(batch.publish_seq, o.id) for o in batch.observations]
    stream.cancel()
    return seen


async def test_kill_and_restart_delivers_every_published_observation_exactly_once(
    awareness: AwarenessProcess,
):
    client = Client(awareness.target)
    probe = await client.adapter_id("probe")
    before = [await client.emit(probe, "high", n=n) for n in range(6)]
    # The subscriber reads part of the stream, remembers its cursor, then Awareness dies.
    read = await _collect(client, 0, 3)
    cursor = read[-1][0]
    await client.close()
    awareness.stop(signal.SIGKILL)

    awareness.start()
    client = Client(awareness.target)
    probe = await client.adapter_id("probe")
    after = [await client.emit(probe, "high", n=n) for n in range(6, 8)]
    stream = client.subscribe(cursor)
    rest: list[tuple[int, str]] = []
    while len(rest) < 5:
        batch = await next_batch(stream)
        rest += [(batch.publish_seq, o.id) for o in batch.observations]
    delivered = [i for _, i in read + rest]
    assert delivered == before + after
    seqs = [s for s, _ in read + rest]
    assert seqs == sorted(set(seqs))
    # Nothing further is pending: a high marker is the very next batch.
    marker = await client.emit(probe, "high")
    assert [o.id for o in (await next_batch(stream)).observations] == [marker]
    stream.cancel()
    await client.close()


async def test_shutdown_ends_the_stream_before_flushing_and_the_flush_is_kept(
    awareness_dirs: AwarenessProcess,
):
    awareness_dirs.extra_env["TOBE_AWARENESS__LOW_WINDOW"] = "600"
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    probe = await client.adapter_id("probe")
    stream = client.subscribe()
    marker = await client.emit(probe, "high")
    first = await next_batch(stream)
    buffered = await client.emit(probe, "low")

    assert awareness_dirs.stop(signal.SIGTERM) == 0
    # The live stream ended without ever carrying the flushed low observation.
    assert await stream.read() is grpc.aio.EOF
    await client.close()

    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    resumed = await next_batch(client.subscribe(first.publish_seq))
    assert [o.id for o in resumed.observations] == [buffered]
    assert [o.id for o in first.observations] == [marker]
    await client.close()


async def test_resuming_beyond_the_journal_is_out_of_range(awareness: AwarenessProcess):
    client = Client(awareness.target)
    probe = await client.adapter_id("probe")
    await client.emit(probe, "high")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await client.subscribe(after_seq=5).read()
    assert caught.value.code() == grpc.StatusCode.OUT_OF_RANGE
    assert "resubscribe from 0" in caught.value.details()
    assert (await next_batch(client.subscribe(after_seq=0))).publish_seq == 1
    await client.close()


async def _batches_before_marker(client: Client) -> list[list[str]]:
    """The observation ids of every batch in the journal, read up to a new high marker."""
    stream = client.subscribe(0)
    marker = await client.emit(await client.adapter_id("probe"), "high")
    batches: list[list[str]] = []
    while True:
        ids = [o.id for o in (await next_batch(stream)).observations]
        if ids == [marker]:
            stream.cancel()
            return batches
        batches.append(ids)


async def test_low_observations_acknowledged_before_a_kill_are_published_once_after_restart(
    awareness_dirs: AwarenessProcess,
):
    # A window far longer than the test: only the journal can carry them over the kill.
    awareness_dirs.extra_env["TOBE_AWARENESS__LOW_WINDOW"] = "600"
    add_adapter(awareness_dirs.adapters_dir, BUILTIN / "webhook")
    default = (BUILTIN / "webhook" / "config.default.json").read_text()
    awareness_dirs.write_config(
        "webhook",
        {
            **json.loads(default),
            "auto_start": True,
            "port": 0,
            "secret": WEBHOOK_SECRET,
            "trust": "low",
        },
    )
    awareness_dirs.start()
    client = Client(awareness_dirs.target)
    webhook = await client.adapter_id("webhook")
    url = (await client.observe(webhook, "endpoint"))["result"]["url"]
    acknowledged = []
    async with httpx.AsyncClient() as http:
        for n in range(3):
            response = await http.post(
                url, headers={"Authorization": f"Bearer {WEBHOOK_SECRET}"}, json={"n": n}
            )
            assert response.status_code == 202
            acknowledged.append(response.json()["id"])
    await client.close()
    awareness_dirs.stop(signal.SIGKILL)

    # Published at the next start as one batch, and not again after another kill: a
    # subscriber reading the whole journal gets each exactly once.
    for _ in range(2):
        awareness_dirs.start()
        client = Client(awareness_dirs.target)
        batches = await _batches_before_marker(client)
        assert [b for b in batches if set(b) & set(acknowledged)] == [acknowledged]
        await client.close()
        awareness_dirs.stop(signal.SIGKILL)
