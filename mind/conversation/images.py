"""Images sent with a message: what they are, checked by their bytes, and how many may come.

A client declares each image's media type, but what the bytes say is what counts: a model is
told the media type it gets, and a mislabelled image would be refused by the provider on every
later request of the conversation. So an image is accepted only when its magic bytes are one
of the four formats every supported provider reads and agree with the declared type. Then it
is brought within the size rule (`mind.conversation.image_limits`): one too large is resized to
a JPEG, and one that cannot be is refused naming the limit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from mind.conversation.image_limits import fit_image
from mind.errors import InvalidInput
from tobe.media_types import IMAGE_MEDIA_TYPES, detect_image_type


@dataclass(frozen=True)
class ImageUpload:
    """An image as a client sent it."""

    media_type: str
    data: bytes


@dataclass(frozen=True)
class CheckedImage:
    """An accepted image: its bytes, what they are, and the SHA-256 it is stored under."""

    digest: str
    media_type: str
    data: bytes

    @property
    def size_bytes(self) -> int:
        return len(self.data)

    def ref(self) -> dict[str, object]:
        """What a message's payload keeps of it (never the bytes)."""
        return {"digest": self.digest, "media_type": self.media_type, "size_bytes": len(self.data)}


def check_images(
    uploads: Sequence[ImageUpload],
    *,
    max_bytes: int,
    max_count: int,
    carrier: str = "the message",
) -> list[CheckedImage]:
    """The uploads, checked and within the size rule; InvalidInput names the first image (by
    index) that is refused.

    `carrier` names what brought them in the error (a message, a tool's result)."""
    if len(uploads) > max_count:
        raise InvalidInput(
            f"{carrier} carries {len(uploads)} images; the maximum is {max_count} "
            "(setting mind.max_images)"
        )
    checked = []
    for index, upload in enumerate(uploads):
        size = len(upload.data)
        if size == 0:
            raise InvalidInput(f"image {index} is empty")
        found = detect_image_type(upload.data)
        if found is None:
            raise InvalidInput(
                f"image {index} is not a PNG, JPEG, WebP or GIF image (by its content); "
                f"supported media types: {', '.join(IMAGE_MEDIA_TYPES)}"
            )
        if upload.media_type != found:
            declared = upload.media_type or "no media type"
            raise InvalidInput(
                f"image {index} is declared {declared!r} but its content is {found!r}"
            )
        fitted = fit_image(upload.data, found, max_bytes=max_bytes, label=f"image {index}")
        checked.append(
            CheckedImage(hashlib.sha256(fitted.data).hexdigest(), fitted.media_type, fitted.data)
        )
    return checked
