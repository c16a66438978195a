"""What a model that cannot see images gets instead of them (seed 004 §3.3.5).

Whether a model sees images is a fact of the model (`ModelInfo.vision`), so each provider
decides when it encodes a request: the provider view hands every provider the same messages.
A provider without a catalog entry (the Scripted fixture without `[provider] model`) is taken
as blind: nothing is sent as an image to a model not known to see images.
"""

from __future__ import annotations

from mind.providers.base import ImagePart
from mind.providers.catalog import ModelInfo

IMAGE_UNSUPPORTED = "[image: the current model cannot see images]"


def sees_images(info: ModelInfo | None) -> bool:
    return info is not None and info.vision


def blind_text(text: str, images: list[ImagePart]) -> str:
    """`text` followed by one placeholder line per image."""
    return "\n".join(([text] if text else []) + [IMAGE_UNSUPPORTED for _ in images])
