"""Durable publish: nothing published is lost or repeated across kills and restarts."""

from __future__ import annotations

import signal

import grpc
import pytest
from awareness_harness import AwarenessProcess, Client, next_batch


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
