"""The image formats the platform accepts, recognised by their bytes (the Mind checks every
upload with it; `tobe chat` uses it to label a file before sending it)."""

from __future__ import annotations

# What every supported provider reads.
IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")


def detect_image_type(data: bytes) -> str | None:
    """The image format the bytes start with (PNG, JPEG, WebP, GIF), or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    return None
