"""The media pipeline: analysis, content addressing, and resolution of refs."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from awareness_harness import Client, batch_with
from awareness_images import gif, jpeg, png

from awareness.adapter import MediaInput
from awareness.errors import MediaError
from awareness.media import MediaStore


@pytest.mark.parametrize(
    ("data", "mime", "size"),
    [
        (png(7, 3), "image/png", (7, 3)),
        (gif(5, 9), "image/gif", (5, 9)),
        (jpeg(640, 480), "image/jpeg", (640, 480)),
    ],
)
def test_images_are_analysed_from_their_headers(tmp_path: Path, data: bytes, mime: str, size):
    ref = MediaStore(tmp_path).ingest(MediaInput(filename="upload.bin", data=data))
    assert (ref.mime_type, (ref.width, ref.height), ref.size_bytes) == (mime, size, len(data))


def test_identical_bytes_share_one_stored_file(tmp_path: Path):
    store = MediaStore(tmp_path)
    first = store.ingest(MediaInput(filename="a.txt", data=b"same"))
    second = store.ingest(MediaInput(filename="b.txt", data=b"same"))
    assert first.ref == second.ref and first.mime_type == "text/plain"
    assert Path(store.resolve(first.ref)["path"]).read_bytes() == b"same"
    assert len([p for p in tmp_path.iterdir() if not p.name.endswith(".json")]) == 1


def test_unknown_or_malformed_refs_are_clear_errors(tmp_path: Path):
    store = MediaStore(tmp_path)
    with pytest.raises(MediaError, match="unknown media ref"):
        store.resolve("media:" + "0" * 64)
    with pytest.raises(MediaError, match="is not a media ref"):
        store.resolve("media:../../etc/passwd")


async def test_inbound_media_becomes_a_ref_that_resolves_back_outbound(shared_client: Client):
    client = shared_client
    probe = await client.adapter_id("probe")
    data = png(4, 2)
    stream = client.subscribe()
    result = await client.interact(
        probe,
        "emit",
        trust="high",
        attachments=[{"filename": "dot.png", "data_base64": base64.b64encode(data).decode()}],
    )
    assert result["status"] == "success"
    [observation] = (await batch_with(stream, result["result"]["observation_id"])).observations
    [ref] = observation.media
    assert (ref.mime_type, ref.width, ref.height, ref.filename) == ("image/png", 4, 2, "dot.png")
    assert ref.ref.startswith("media:")
    echoed = await client.interact(probe, "echo_media", media=[ref.ref])
    [resolved] = echoed["result"]["media"]
    assert base64.b64decode(resolved["data_base64"]) == data
    assert resolved["ref"] == ref.ref and resolved["mime_type"] == "image/png"
    stream.cancel()


async def test_outbound_unknown_ref_is_an_error_in_content(shared_client: Client):
    client = shared_client
    probe = await client.adapter_id("probe")
    result = await client.interact(probe, "echo_media", media=["media:" + "a" * 64])
    assert result["status"] == "error"
    assert "unknown media ref" in result["error"]
