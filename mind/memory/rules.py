"""The rules of a conversation's memory, each refusal naming its rule and its numbers.

Sizes are UTF-8 bytes of the text (keys are not counted): what is stored and what a quota
protects is bytes, and the model cannot game a character count with wide characters. Keys are
counted in characters, like the conversation keys they sit next to.
"""

from __future__ import annotations

from mind.errors import InvalidInput

MAX_KEY_CHARS = 64
MAX_TEXT_BYTES = 16 * 1024
MAX_ENTRIES = 64
MAX_TOTAL_BYTES = 256 * 1024


class MemoryRefused(InvalidInput):
    """A memory operation broke a rule; the message is the reason the model or owner sees."""


def text_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def check_key(key: str) -> None:
    if not key:
        raise MemoryRefused(
            f"a memory key must not be empty: name the entry with 1 to {MAX_KEY_CHARS} characters"
        )
    if len(key) > MAX_KEY_CHARS:
        raise MemoryRefused(
            f"memory key {key[:MAX_KEY_CHARS]!r}… is {len(key)} characters long; "
            f"at most {MAX_KEY_CHARS} are allowed"
        )
    if any(char.isspace() for char in key):
        raise MemoryRefused(
            f"memory key {key!r} contains whitespace; use a key without spaces, tabs or "
            "line breaks (e.g. '-' or '_' instead)"
        )
    if "/" in key:
        raise MemoryRefused(f"memory key {key!r} contains '/', which keys may not contain")


def check_text(key: str, text: str) -> int:
    """The text's size in bytes, if it fits one entry."""
    size = text_bytes(text)
    if size > MAX_TEXT_BYTES:
        raise MemoryRefused(
            f"the text for memory key {key!r} is {size} bytes (UTF-8); an entry holds at most "
            f"{MAX_TEXT_BYTES} bytes (16 KB)"
        )
    return size


def check_quota(key: str, size: int, others: dict[str, int]) -> None:
    """Writing `size` bytes under `key` next to the conversation's other entries (their
    sizes by key, `key` itself excluded) keeps within the per-conversation quotas."""
    if len(others) + 1 > MAX_ENTRIES:
        raise MemoryRefused(
            f"memory is full: this conversation already has {len(others)} entries, the most "
            f"allowed ({MAX_ENTRIES}); overwrite or delete one to write {key!r}"
        )
    held = sum(others.values())
    if held + size > MAX_TOTAL_BYTES:
        raise MemoryRefused(
            f"memory total would be {held + size} bytes (UTF-8): {held} bytes in the other "
            f"entries plus {size} for {key!r}; a conversation holds at most {MAX_TOTAL_BYTES} "
            "bytes (256 KB); shorten or delete entries first"
        )
