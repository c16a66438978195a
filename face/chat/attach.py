"""`/image PATH [text]` in `tobe chat`: read a file as an image to send, or say why not.

The type comes from the file's bytes, not its name, as the Mind checks it; refusing here
(missing, unreadable, too big, not an image) saves sending megabytes to be refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tobe.media_types import detect_image_type


class ImageRefused(Exception):
    """The file cannot be sent as an image; the message says why."""


@dataclass(frozen=True)
class Attachment:
    name: str
    media_type: str
    data: bytes

    def label(self) -> str:
        """How the transcript shows it: `[image: photo.jpg, 412 KB]`."""
        return f"[image: {self.name}, {human_size(len(self.data))}]"


def human_size(size: int) -> str:
    if size < 1024 * 1024:
        return f"{max(1, round(size / 1024))} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def split_argument(argument: str) -> tuple[str, str]:
    """(path, text) of `/image`'s argument; a path with spaces is quoted ("..." or '...')."""
    argument = argument.strip()
    quote = argument[:1]
    if quote in {'"', "'"} and quote in argument[1:]:
        path, _, text = argument[1:].partition(quote)
        return path, text.strip()
    path, _, text = argument.partition(" ")
    return path, text.strip()


def read_image(path_text: str, max_bytes: int) -> Attachment:
    """The image at `path_text` (`~` expanded), at most `max_bytes` long."""
    if not path_text:
        raise ImageRefused("usage: /image PATH [text]")
    path = Path(path_text).expanduser()
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise ImageRefused(f"{path} is not a file")
        if size > max_bytes:
            raise ImageRefused(
                f"{path} is {human_size(size)}; images may be at most {human_size(max_bytes)}"
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise ImageRefused(f"no such file: {path}") from None
    except OSError as exc:
        raise ImageRefused(f"cannot read {path}: {exc.strerror or exc}") from None
    media_type = detect_image_type(data)
    if media_type is None:
        raise ImageRefused(f"{path} is not a PNG, JPEG, WebP or GIF image")
    return Attachment(path.name, media_type, data)
