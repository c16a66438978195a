"""The one size rule for images, wherever they enter: longest side at most 2048 px, at most
`mind.max_image_bytes` (5 MiB by default) — the rule the web client applies before sending.

An image within both limits is kept as it came, byte for byte (its digest is what the client
computed). One over either is brought within them: decoded, scaled so its longest side is at
most 2048 px, and encoded as JPEG, lowering the quality and then the size until it fits.
Only what cannot be brought within is refused, naming the limit: bytes no decoder reads,
more pixels than the Mind decodes (a decompression bomb), or more bytes than it reads at all.
An image whose header cannot be read but whose size is within the limit is kept: its magic
bytes were checked, and its dimensions are then the provider's to judge.

Pillow is loaded when the first image arrives, not with the Mind.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mind.errors import InvalidInput

if TYPE_CHECKING:
    from PIL import Image

# Longest side, in pixels, of an image given to a model (the web client's rule too).
MAX_IMAGE_SIDE = 2048
# The most pixels decoded to bring an image within the limits (a 10,000 × 8,000 photo).
MAX_SOURCE_PIXELS = 80_000_000
# How many times `mind.max_image_bytes` an image may be before it is refused unread.
SOURCE_BYTES_FACTOR = 4
JPEG_QUALITIES = (90, 82, 74, 66, 58, 50)
SHRINK_STEP = 0.75
MIN_SIDE = 16
_PIXEL_LIMIT = (
    f"the Mind resizes images of at most {MAX_SOURCE_PIXELS} pixels to its limit of "
    f"{MAX_IMAGE_SIDE} px on the longest side"
)


@dataclass(frozen=True)
class FittedImage:
    media_type: str
    data: bytes
    # Whether the bytes are new (resized or re-encoded), not the ones that came.
    changed: bool


def source_bytes(max_bytes: int) -> int:
    """The largest image read at all; larger ones are refused before decoding."""
    return max_bytes * SOURCE_BYTES_FACTOR


def fit_image(data: bytes, media_type: str, *, max_bytes: int, label: str) -> FittedImage:
    """`data` within the limits; InvalidInput naming `label` (e.g. "image 0") and the limit
    when it cannot be brought within them."""
    if len(data) > source_bytes(max_bytes):
        raise InvalidInput(
            f"{label} is {len(data)} bytes; the largest image the Mind reads to bring within "
            f"its limits is {source_bytes(max_bytes)} bytes ({SOURCE_BYTES_FACTOR} × "
            "mind.max_image_bytes); send it at most "
            f"{MAX_IMAGE_SIDE} px on its longest side and at most {max_bytes} bytes"
        )
    size = _dimensions(data, label)
    if size is None:
        if len(data) <= max_bytes:
            return FittedImage(media_type, data, changed=False)
        raise InvalidInput(
            f"{label} is {len(data)} bytes; the maximum is {max_bytes} bytes "
            "(setting mind.max_image_bytes), and its bytes cannot be decoded to be made smaller"
        )
    width, height = size
    if max(width, height) <= MAX_IMAGE_SIDE and len(data) <= max_bytes:
        return FittedImage(media_type, data, changed=False)
    if width * height > MAX_SOURCE_PIXELS:
        raise InvalidInput(f"{label} is {width}×{height} pixels; {_PIXEL_LIMIT}")
    return FittedImage("image/jpeg", _as_jpeg(data, max_bytes, label), changed=True)


def _dimensions(data: bytes, label: str) -> tuple[int, int] | None:
    """Width and height from the header (nothing is decoded), or None when unreadable."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                return image.size
    except Image.DecompressionBombError:
        # Pillow's own ceiling (twice its warning size) is far above ours.
        raise InvalidInput(
            f"{label} has more than {MAX_SOURCE_PIXELS} pixels; {_PIXEL_LIMIT}"
        ) from None
    except (OSError, ValueError, SyntaxError):
        return None


def _as_jpeg(data: bytes, max_bytes: int, label: str) -> bytes:
    from PIL import Image, ImageOps

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as opened:
                image = _flattened(ImageOps.exif_transpose(opened))
    except (OSError, ValueError, Image.DecompressionBombError, SyntaxError) as exc:
        raise InvalidInput(f"{label} cannot be decoded to be resized: {exc}") from None
    scale = min(1.0, MAX_IMAGE_SIDE / max(image.size))
    while True:
        width, height = (max(MIN_SIDE, round(side * scale)) for side in image.size)
        sized = image if (width, height) == image.size else image.resize((width, height))
        for quality in JPEG_QUALITIES:
            encoded = io.BytesIO()
            sized.save(encoded, "JPEG", quality=quality, optimize=True)
            if encoded.tell() <= max_bytes:
                return encoded.getvalue()
        if max(width, height) <= MIN_SIDE:
            raise InvalidInput(
                f"{label} cannot be made as small as {max_bytes} bytes "
                "(setting mind.max_image_bytes)"
            )
        scale *= SHRINK_STEP


def _flattened(image: Image.Image) -> Image.Image:
    """RGB for JPEG: transparency over white, palettes and other modes converted."""
    from PIL import Image

    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return image.convert("RGB")
