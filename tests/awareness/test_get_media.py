"""GetMedia over a real Awareness process: a stored object's bytes for the Mind's credential,
clear refusals for unknown, malformed and oversized requests."""

from __future__ import annotations

import base64
import hashlib

import grpc
import pytest
from awareness_harness import AwarenessProcess, Client
from awareness_images import png

from tobe.v1 import awareness_pb2 as pb

# A PNG whose body occurs nowhere else, to look for it in the log.
IMAGE = png(3, 2) + b"get-media-marker-" * 8


async def _stored(client: Client, data: bytes, filename: str) -> str:
    """Have the probe adapter store `data` (as an observation's media) and return its ref."""
    probe = await client.adapter_id("probe")
    attachment = {"filename": filename, "data_base64": base64.b64encode(data).decode()}
    result = await client.interact(probe, "emit", trust="high", attachments=[attachment])
    assert result["status"] == "success", result
    return "media:" + hashlib.sha256(data).hexdigest()


async def _get(client: Client, ref: str, max_bytes: int) -> pb.GetMediaResponse:
    request = pb.GetMediaRequest(ref=ref, max_bytes=max_bytes)
    return await client.stub.GetMedia(request, metadata=client.metadata)


async def test_get_media_returns_the_stored_bytes_and_their_type_without_logging_them(
    shared_awareness: AwarenessProcess, shared_client: Client
):
    ref = await _stored(shared_client, IMAGE, "dot.png")
    reply = await _get(shared_client, ref, len(IMAGE))
    assert (reply.mime_type, reply.data) == ("image/png", IMAGE)
    assert "get-media-marker" not in shared_awareness.stderr()


async def test_get_media_of_an_unknown_ref_is_not_found(shared_client: Client):
    ref = "media:" + "0" * 64
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _get(shared_client, ref, 1024)
    assert refused.value.code() is grpc.StatusCode.NOT_FOUND
    assert ref in (refused.value.details() or "")


@pytest.mark.parametrize(
    "ref", ["media:../../etc/passwd", "sha256:" + "a" * 64, "media:" + "A" * 64, ""]
)
async def test_get_media_of_a_malformed_ref_is_invalid_argument(shared_client: Client, ref: str):
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _get(shared_client, ref, 1024)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "is not a media ref" in (refused.value.details() or "")


async def test_get_media_without_a_positive_max_bytes_is_invalid_argument(shared_client: Client):
    ref = await _stored(shared_client, IMAGE, "dot.png")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _get(shared_client, ref, 0)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT


async def test_get_media_larger_than_max_bytes_is_failed_precondition(shared_client: Client):
    data = b"%PDF-1.4 a report " * 10
    ref = await _stored(shared_client, data, "report.pdf")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _get(shared_client, ref, len(data) - 1)
    assert refused.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert f"is {len(data)} bytes" in (refused.value.details() or "")
    exact = await _get(shared_client, ref, len(data))
    assert (exact.mime_type, exact.data) == ("application/pdf", data)


@pytest.mark.parametrize("token", ["wrong-token", ""])
async def test_get_media_without_the_service_token_is_unauthenticated(
    shared_awareness: AwarenessProcess, shared_client: Client, token: str
):
    ref = await _stored(shared_client, IMAGE, "dot.png")
    stranger = Client(shared_awareness.target, token)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _get(stranger, ref, len(IMAGE))
    finally:
        await stranger.close()
    assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
