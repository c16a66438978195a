"""Image bytes in the store: written once under their digest, read back for the provider view.

A message keeps only `images: [{digest, media_type, size_bytes}]` in its payload; the bytes
live in `media`, one row per distinct image however many messages carry it. Events, snapshots
and history pages are rendered from the payload, so the bytes leave the store only towards the
model and, one image per call, towards someone who may read a conversation that carries it
(`image_of`).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from mind.conversation.images import CheckedImage
from mind.providers.base import ImagePart
from mind.store import models
from mind.store.insert_once import conflict_insert


def store_images(session: Session, images: Sequence[CheckedImage]) -> None:
    """Insert the images not stored yet; the same bytes twice (in one message, in two, or in
    two concurrent units) store one row."""
    if not images:
        return
    dialect_name = session.get_bind().dialect.name
    now = datetime.now(UTC)
    for image in {image.digest: image for image in images}.values():
        session.execute(
            conflict_insert(dialect_name, models.Media)
            .values(
                digest=image.digest,
                media_type=image.media_type,
                size_bytes=image.size_bytes,
                data=image.data,
                created_at=now,
            )
            .on_conflict_do_nothing()
        )


def image_refs(payload: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The image references a message's (or an input's) payload keeps."""
    return list((payload or {}).get("images", []))


def forwarded_image_refs(payload: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The image references of the chat record a message's payload forwards, in order."""
    return [ref for item in (payload or {}).get("forwarded", []) for ref in item.get("images", [])]


def digests_of(payloads: Iterable[Mapping[str, Any] | None]) -> set[str]:
    """The digests of every image the payloads refer to, forwarded ones included."""
    return {
        ref["digest"]
        for payload in payloads
        for ref in image_refs(payload) + forwarded_image_refs(payload)
    }


def read_images(session: Session, digests: Iterable[str]) -> dict[str, ImagePart]:
    """The stored images among `digests`, ready for a provider (base64 once, here); a digest
    without a row is left out, and its image is shown to the model as unreadable."""
    wanted = sorted(set(digests))
    if not wanted:
        return {}
    rows = session.execute(
        select(models.Media.digest, models.Media.media_type, models.Media.data).where(
            models.Media.digest.in_(wanted)
        )
    )
    return {
        digest: ImagePart(media_type, base64.b64encode(data).decode("ascii"))
        for digest, media_type, data in rows
    }


def image_of(session: Session, key: str, digest: str) -> tuple[str, bytes] | None:
    """(media type, bytes) of the image `digest` when a message or an input of conversation
    `key` carries it; None otherwise (the bytes of another conversation stay unreachable)."""
    if not carries(session, key, digest):
        return None
    row = session.execute(
        select(models.Media.media_type, models.Media.data).where(models.Media.digest == digest)
    ).first()
    return None if row is None else (row[0], row[1])


def carries(session: Session, key: str, digest: str) -> bool:
    """Whether a message or an input of conversation `key` carries the image `digest` (a
    widget's cover is one of these: `mind.widgets.widgets.set_presentation`)."""
    # The JSON text is narrowed down by the digest (64 hex digits) in SQL, then each candidate's
    # references are read: a digest inside some other text is no reference.
    messages = session.scalars(
        select(models.Message.payload).where(
            models.Message.conversation_key == key,
            cast(models.Message.payload, Text).contains(digest),
        )
    )
    if any(
        ref.get("digest") == digest
        for payload in messages
        for ref in image_refs(payload) + forwarded_image_refs(payload)
    ):
        return True
    inputs = session.scalars(
        select(models.Input.images).where(
            models.Input.conversation_key == key,
            cast(models.Input.images, Text).contains(digest),
        )
    )
    return any(ref.get("digest") == digest for refs in inputs for ref in refs)
