"""How much of a sensitive tool's result a sealed run keeps: at most 512 KiB of UTF-8.

A sensitive result is sealed whole into every row that carries it (the message, the
projection, their outbox events) and sent to the model in every later request of the turn;
an unbounded one (a whole mailbox, a database dump) would multiply in the store and crowd out
the context. The cut keeps the start, never splits a character, and ends with a marker that
says how much was left out, so the model knows to ask for less.
"""

from __future__ import annotations

SENSITIVE_RESULT_LIMIT = 512 * 1024


def truncation_marker(total_bytes: int) -> str:
    return (
        f"\n[truncated: this sensitive result was {total_bytes:,} bytes; only the first part "
        f"is shown, within {SENSITIVE_RESULT_LIMIT:,} bytes; ask for less to see the rest]"
    )


def capped_result(text: str) -> str:
    """`text` itself when it fits in the limit, else its start and the marker, which together
    take at most `SENSITIVE_RESULT_LIMIT` bytes of UTF-8."""
    data = text.encode("utf-8")
    if len(data) <= SENSITIVE_RESULT_LIMIT:
        return text
    marker = truncation_marker(len(data))
    room = SENSITIVE_RESULT_LIMIT - len(marker.encode("utf-8"))
    return data[:room].decode("utf-8", errors="ignore") + marker
