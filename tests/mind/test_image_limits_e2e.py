"""The size rule and GetImage through a real Mind: an oversized image sent with SendChat is
stored as a JPEG within 2048 px, one that cannot be brought within is refused naming the
limit, and an image's bytes are given only to who may read a conversation carrying it."""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator

import grpc
import pytest
from helpers.mind_process import MindProcess, running_mind
from PIL import Image

from tobe.v1 import common_pb2, mind_pb2, mind_pb2_grpc

pytestmark = pytest.mark.e2e
KEY = "p_pictures"


def _big_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (3000, 1000), (10, 120, 200)).save(out, "PNG")
    return out.getvalue()


def _bomb() -> bytes:
    """A PNG whose header claims 20,000 × 20,000 pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 20_000, 20_000, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"x" * 1024)


@pytest.fixture(scope="module")
def mind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MindProcess]:
    root = tmp_path_factory.mktemp("mind")
    script = root / "script.yaml"
    script.write_text('runs:\n  - match: ".*"\n    steps:\n      - text: "seen"\n')
    with running_mind(root, script=script) as process:
        yield process


def _stub(mind: MindProcess) -> tuple[grpc.Channel, mind_pb2_grpc.MindStub]:
    channel = grpc.insecure_channel(mind.address)
    return channel, mind_pb2_grpc.MindStub(channel)


def _as(principal: str) -> mind_pb2.OnBehalfOf:
    return mind_pb2.OnBehalfOf(principal=principal, scopes=["chat"])


def _send(stub: mind_pb2_grpc.MindStub, mind: MindProcess, idem: str, data: bytes) -> None:
    stub.SendChat(
        mind_pb2.SendChatRequest(
            on_behalf_of=_as("alice"),
            conversation_key=KEY,
            idempotency_key=idem,
            images=[common_pb2.ImageUpload(media_type="image/png", data=data)],
        ),
        metadata=mind.gateway_metadata,
        timeout=30,
    )


def test_an_oversized_image_is_stored_as_a_jpeg_within_2048_px_and_read_back_by_its_owner(
    mind: MindProcess,
) -> None:
    channel, stub = _stub(mind)
    with channel:
        stub.CreateConversation(
            mind_pb2.CreateConversationRequest(on_behalf_of=_as("alice"), key=KEY),
            metadata=mind.gateway_metadata,
            timeout=15,
        )
        _send(stub, mind, "big", _big_png())
        history = stub.GetHistory(
            mind_pb2.GetHistoryRequest(on_behalf_of=_as("alice"), conversation_key=KEY, limit=50),
            metadata=mind.gateway_metadata,
            timeout=15,
        )
        [ref] = [image for m in history.messages for image in m.images]
        got = stub.GetImage(
            mind_pb2.GetImageRequest(
                on_behalf_of=_as("alice"), conversation_key=KEY, digest=ref.digest
            ),
            metadata=mind.gateway_metadata,
            timeout=15,
        )
        assert (ref.media_type, got.media_type) == ("image/jpeg", "image/jpeg")
        assert len(got.data) == ref.size_bytes <= 5 * 1024 * 1024
        with Image.open(io.BytesIO(got.data)) as image:
            assert image.size == (2048, 683)

        # Bob cannot read Alice's conversation; a digest it does not carry is not there either.
        for principal, digest in (("bob", ref.digest), ("alice", "0" * 64)):
            with pytest.raises(grpc.RpcError) as refused:
                stub.GetImage(
                    mind_pb2.GetImageRequest(
                        on_behalf_of=_as(principal), conversation_key=KEY, digest=digest
                    ),
                    metadata=mind.gateway_metadata,
                    timeout=15,
                )
            assert refused.value.code() is grpc.StatusCode.NOT_FOUND


def test_an_image_that_cannot_be_brought_within_the_limits_is_refused_naming_them(
    mind: MindProcess,
) -> None:
    channel, stub = _stub(mind)
    with channel:
        with pytest.raises(grpc.RpcError) as refused:
            _send(stub, mind, "bomb", _bomb())
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "more than 80000000 pixels" in (refused.value.details() or "")
        assert "2048 px on the longest side" in (refused.value.details() or "")
