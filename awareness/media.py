"""The media pipeline: content-addressed storage, analysis, and ref resolution.

Isolated from routing: the engine hands it inbound `MediaInput`s and gets `MediaRef`s back,
and hands it outbound `args.media` to be resolved into stored files. Files live at
`<root>/<sha256>` with their analysis beside them in `<sha256>.json`; refs are `media:<sha256>`.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
import re
import struct
import tempfile
from pathlib import Path
from typing import Any

from awareness.adapter import MediaInput
from awareness.errors import MalformedMediaRef, MediaError, MediaTooLarge, UnknownMediaRef
from awareness.model import MediaRef
from tobe.runtime.private_files import private_directory

REF_PREFIX = "media:"
_REF = re.compile(r"media:([0-9a-f]{64})")


class MediaStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        private_directory(root)

    def ingest(self, item: MediaInput) -> MediaRef:
        """Store inbound media (bytes or a file) and return its analysed ref."""
        data = self._read(item)
        digest = hashlib.sha256(data).hexdigest()
        mime, width, height = analyse(data, item.filename)
        ref = MediaRef(
            ref=REF_PREFIX + digest,
            mime_type=mime,
            size_bytes=len(data),
            width=width,
            height=height,
            filename=Path(item.filename).name,
        )
        blob = self.root / digest
        if not blob.exists():
            _atomic_write(blob, data)
        _atomic_write(self.root / f"{digest}.json", json.dumps(ref.as_dict()).encode())
        return ref

    @staticmethod
    def _read(item: MediaInput) -> bytes:
        if item.data is not None:
            return item.data
        if item.path is None:
            raise MediaError(f"media {item.filename!r} has neither data nor a path")
        try:
            return Path(item.path).read_bytes()
        except OSError as exc:
            raise MediaError(f"cannot read media file {item.path}: {exc.strerror}") from None

    def resolve(self, ref: object) -> dict[str, Any]:
        """The stored file and its analysis for a `media:<sha256>` ref."""
        match = _REF.fullmatch(ref) if isinstance(ref, str) else None
        if match is None:
            raise MalformedMediaRef(f"{ref!r} is not a media ref (expected media:<64 hex digits>)")
        blob = self.root / match.group(1)
        meta = self.root / f"{match.group(1)}.json"
        if not blob.is_file() or not meta.is_file():
            raise UnknownMediaRef(f"unknown media ref {ref}")
        return {**json.loads(meta.read_text()), "path": str(blob)}

    def read(self, ref: str, max_bytes: int) -> tuple[str, bytes]:
        """(media type, bytes) of a stored object; MediaTooLarge, checked before reading, when
        it is larger than `max_bytes`, so a caller's limit never costs a large read."""
        stored = self.resolve(ref)
        blob = Path(stored["path"])
        size = blob.stat().st_size
        if size > max_bytes:
            raise MediaTooLarge(
                f"media {ref} is {size} bytes; the caller takes at most {max_bytes}"
            )
        return stored["mime_type"], blob.read_bytes()

    def resolve_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """Replace `args["media"]` refs (strings or `{ref}` objects) with resolved files."""
        if "media" not in args:
            return args
        media = args["media"]
        items = media if isinstance(media, list) else [media]
        resolved = [self.resolve(m.get("ref") if isinstance(m, dict) else m) for m in items]
        return {**args, "media": resolved}


def _atomic_write(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(prefix=".media.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def analyse(data: bytes, filename: str) -> tuple[str, int, int]:
    """(mime type, width, height): PNG, JPEG and GIF by their headers, others by name."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return "image/png", width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return "image/gif", width, height
    if data.startswith(b"\xff\xd8"):
        width, height = _jpeg_size(data)
        return "image/jpeg", width, height
    guessed, _ = mimetypes.guess_type(filename)
    return guessed or "application/octet-stream", 0, 0


# JPEG start-of-frame markers that carry the image size (not DHT/JPG/DAC).
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(data: bytes) -> tuple[int, int]:
    """Walk the JPEG segments to the first start-of-frame; (0, 0) if there is none."""
    offset = 2
    while offset + 4 <= len(data):
        if data[offset] != 0xFF:
            return 0, 0
        marker = data[offset + 1]
        if marker == 0xFF:
            offset += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            offset += 2
            continue
        (length,) = struct.unpack(">H", data[offset + 2 : offset + 4])
        if marker in _SOF and offset + 9 <= len(data):
            height, width = struct.unpack(">HH", data[offset + 5 : offset + 9])
            return width, height
        offset += 2 + length
    return 0, 0
