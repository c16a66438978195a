"""The images an observation note shows the model: fetched from Awareness, checked by bytes.

Every media object of an observation is described in the note's JSON. Those Awareness analysed
as an image are also fetched (`GetMedia`) and, when their bytes are a PNG, JPEG, WebP or GIF
that is within the size rule or can be brought within it (`mind.conversation.image_limits`:
a large snapshot becomes a JPEG of at most 2048 px and `mind.max_image_bytes`), attached to the
note like a person's images (stored by digest in the unit that accepts the note), up to
`mind.max_images` per note. The declared type
only picks what is worth fetching: the bytes decide, so a vision model is never told a type
its image does not have. A media object that cannot be attached stays a description: the
observation is delivered all the same, and one log line names the ref and why.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from typing import Protocol

from mind.awareness.errors import AwarenessLinkError
from mind.awareness.notes import NoteMedia
from mind.conversation.image_limits import fit_image, source_bytes
from mind.conversation.images import CheckedImage
from mind.errors import InvalidInput
from tobe.media_types import IMAGE_MEDIA_TYPES, detect_image_type

log = logging.getLogger(__name__)


class MediaSource(Protocol):
    async def get_media(self, ref: str, max_bytes: int) -> tuple[str, bytes]:
        """(declared media type, bytes); AwarenessLinkError when refused or unreachable."""
        ...


class NoteImages:
    def __init__(self, source: MediaSource, *, max_bytes: int, max_count: int) -> None:
        self._source = source
        self._max_bytes = max_bytes
        self._max_count = max_count

    async def fetch(self, media: Sequence[NoteMedia]) -> tuple[CheckedImage, ...]:
        """The note's images that could be fetched and checked, in order, each once."""
        refs = dict.fromkeys(item.ref for item in media if item.mime_type in IMAGE_MEDIA_TYPES)
        images: list[CheckedImage] = []
        for ref in refs:
            if len(images) >= self._max_count:
                _skip(ref, f"a note carries at most {self._max_count} images (mind.max_images)")
                continue
            image = await self._fetch(ref)
            if image is not None:
                images.append(image)
        return tuple(images)

    async def _fetch(self, ref: str) -> CheckedImage | None:
        try:
            _declared, data = await self._source.get_media(ref, source_bytes(self._max_bytes))
        except AwarenessLinkError as exc:
            _skip(ref, f"Awareness did not give it ({exc})")
            return None
        media_type = detect_image_type(data)
        if media_type is None:
            _skip(ref, "its bytes are not a PNG, JPEG, WebP or GIF image")
            return None
        try:
            fitted = await asyncio.to_thread(
                fit_image, data, media_type, max_bytes=self._max_bytes, label="the image"
            )
        except InvalidInput as exc:
            _skip(ref, str(exc))
            return None
        return CheckedImage(hashlib.sha256(fitted.data).hexdigest(), fitted.media_type, fitted.data)


def _skip(ref: str, why: str) -> None:
    log.warning("observation media %s is delivered as its description only: %s", ref, why)
