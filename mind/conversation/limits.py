"""The checks every API group applies to what a caller sends: sizes, keys, page limits."""

from __future__ import annotations

import unicodedata

from mind.errors import InvalidInput

MAX_IDEMPOTENCY_KEY = 128
MAX_TITLE = 256
# A new title a person gives (RenameConversation); created titles keep `MAX_TITLE`.
MAX_RENAMED_TITLE = 200


def clamp(value: int, default: int, maximum: int) -> int:
    """A page size: `default` for 0, at most `maximum`; InvalidInput when negative."""
    if value < 0:
        raise InvalidInput(f"a limit cannot be negative (got {value})")
    return min(value or default, maximum)


def check_text(text: str, what: str, max_bytes: int, *, images: int | None = None) -> None:
    """Text within the size limit, not empty unless images carry the message (`images` is
    None where a message cannot carry any)."""
    if not text.strip() and not images:
        carriers = "some content" if images is None else "some content or an image"
        raise InvalidInput(f"text is empty: {what} a message with {carriers}")
    size = len(text.encode())
    if size > max_bytes:
        raise InvalidInput(f"text is {size} bytes; the maximum is {max_bytes} bytes")


def check_idempotency_key(idempotency_key: str, what: str) -> None:
    if not idempotency_key or len(idempotency_key) > MAX_IDEMPOTENCY_KEY:
        raise InvalidInput(
            f"idempotency_key is required (1 to {MAX_IDEMPOTENCY_KEY} characters); reuse "
            f"the same key when retrying a {what}"
        )


def checked_title(title: str) -> str:
    """A new title trimmed; InvalidInput when that is empty, longer than `MAX_RENAMED_TITLE`
    or holds a control character (a line break included)."""
    trimmed = title.strip()
    if not trimmed:
        raise InvalidInput("title is empty: give the conversation a name")
    if len(trimmed) > MAX_RENAMED_TITLE:
        raise InvalidInput(
            f"title is {len(trimmed)} characters; the maximum is {MAX_RENAMED_TITLE}"
        )
    if any(unicodedata.category(c) == "Cc" for c in trimmed):
        raise InvalidInput("title holds a control character (a line break or tab): use one line")
    return trimmed
