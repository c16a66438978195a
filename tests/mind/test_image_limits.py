"""The size rule for images (longest side 2048 px, `mind.max_image_bytes`): kept as they came
within it, brought within it as JPEG when over, refused naming the limit when that cannot be."""

from __future__ import annotations

import io
import random
import struct
import zlib

import pytest
from PIL import Image

from mind.conversation.image_limits import MAX_IMAGE_SIDE, fit_image, source_bytes
from mind.conversation.images import ImageUpload, check_images
from mind.errors import InvalidInput
from tobe.media_types import detect_image_type

MIB = 1024 * 1024


def png(width: int, height: int, *, noisy: bool = False, mode: str = "RGB") -> bytes:
    image = Image.new(mode, (width, height), (200, 40, 40, 128)[: len(mode)])
    if noisy:
        rng = random.Random(7)
        image = Image.frombytes(mode, (width, height), rng.randbytes(width * height * len(mode)))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def png_header(width: int, height: int) -> bytes:
    """A PNG claiming `width` × `height` in its header, with no pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"") + chunk(b"IEND", b"")


def size_of(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def test_an_image_within_the_limits_is_kept_byte_for_byte() -> None:
    data = png(2048, 100)
    fitted = fit_image(data, "image/png", max_bytes=5 * MIB, label="image 0")
    assert (fitted.media_type, fitted.data, fitted.changed) == ("image/png", data, False)


def test_an_image_wider_than_2048_px_becomes_a_jpeg_with_its_longest_side_2048() -> None:
    fitted = fit_image(png(3000, 1500), "image/png", max_bytes=5 * MIB, label="image 0")
    assert fitted.changed
    assert fitted.media_type == "image/jpeg" == detect_image_type(fitted.data)
    assert size_of(fitted.data) == (MAX_IMAGE_SIDE, 1024)


def test_a_tall_transparent_image_is_flattened_and_scaled_by_its_height() -> None:
    fitted = fit_image(png(500, 4096, mode="RGBA"), "image/png", max_bytes=5 * MIB, label="x")
    assert size_of(fitted.data) == (250, MAX_IMAGE_SIDE)
    with Image.open(io.BytesIO(fitted.data)) as image:
        assert image.mode == "RGB"


def test_an_image_over_the_byte_limit_is_made_smaller_until_it_fits() -> None:
    data = png(500, 500, noisy=True)  # noise: barely compressible
    limit = 200 * 1024
    assert limit < len(data) <= source_bytes(limit)
    fitted = fit_image(data, "image/png", max_bytes=limit, label="image 0")
    assert fitted.media_type == "image/jpeg"
    assert len(fitted.data) <= limit


def test_undecodable_bytes_over_the_limit_are_refused_naming_the_setting() -> None:
    junk = b"\x89PNG\r\n\x1a\n" + b"\x00" * 300
    with pytest.raises(InvalidInput, match=r"image 2 is 308 bytes; the maximum is 100 .*max_image"):
        fit_image(junk, "image/png", max_bytes=100, label="image 2")


def test_more_than_the_readable_bytes_is_refused_before_decoding() -> None:
    data = png(64, 64, noisy=True)
    limit = len(data) // (source_bytes(1) + 1)
    with pytest.raises(InvalidInput, match=r"largest image the Mind reads .*mind.max_image_bytes"):
        fit_image(data, "image/png", max_bytes=limit, label="image 0")


def test_a_decompression_bomb_is_refused_naming_the_pixel_limit() -> None:
    bomb = png_header(12_000, 8_000)  # what it says is what counts: nothing is decoded
    with pytest.raises(InvalidInput, match=r"12000×8000 pixels; the Mind resizes images of at"):
        fit_image(bomb, "image/png", max_bytes=5 * MIB, label="image 0")


def test_a_persons_oversized_image_is_stored_as_the_resized_jpeg() -> None:
    [image] = check_images(
        [ImageUpload("image/png", png(4000, 3000))], max_bytes=5 * MIB, max_count=1
    )
    assert image.media_type == "image/jpeg"
    assert size_of(image.data) == (2048, 1536)
    assert image.ref()["media_type"] == "image/jpeg"
