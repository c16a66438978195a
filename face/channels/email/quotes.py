"""The new text of a reply: what the person wrote, without what their mail client added.

Mail clients quote the message answered (lines starting with `>`), introduce the quote with an
attribution (`On Tue, 2 Dec 2025, Alice <a@example.org> wrote:`, often wrapped over two lines),
and append the sender's signature after the `-- ` line (RFC 3676). Only the new text goes to
the agent: the quoted part is its own earlier reply, which it already has.
"""

from __future__ import annotations

import re

# The signature separator: `-- ` (RFC 3676); many clients trim its space.
_SIGNATURE = frozenset({"-- ", "--"})
# Outlook and others quote without `>`: everything after this line is the answered message.
_ORIGINAL_MESSAGE = re.compile(r"^\s*-{2,}\s*Original Message\s*-{2,}\s*$", re.IGNORECASE)
# An attribution: starts like "On …" and ends like "… wrote:" or "… schrieb Name:" (in the
# common languages).
_ATTRIBUTION = re.compile(
    r"^(On|Am|Le|El|Il|Op|Den|På|W dniu)\b.*\b(wrote|schrieb|a écrit|escribió|ha scritto|"
    r"schreef|skrev|napisał)\b.*:\s*$",
    re.IGNORECASE | re.DOTALL,
)
# Lines an attribution may be wrapped over.
_ATTRIBUTION_LINES = 3


def new_text(body: str) -> str:
    """`body` without quoted lines, their attributions and the signature."""
    lines = _before_signature(body.replace("\r\n", "\n").split("\n"))
    kept: list[str] = []
    for line in lines:
        if _ORIGINAL_MESSAGE.match(line):
            break
        if line.lstrip().startswith(">"):
            _drop_attribution(kept)
            continue
        kept.append(line)
    return _tidy(kept)


def _before_signature(lines: list[str]) -> list[str]:
    for index, line in enumerate(lines):
        if line in _SIGNATURE:
            return lines[:index]
    return lines


def _drop_attribution(kept: list[str]) -> None:
    """Remove the attribution that ends `kept` (just before a quoted line), if there is one."""
    end = len(kept)
    while end and not kept[end - 1].strip():
        end -= 1
    for start in range(end - 1, max(end - _ATTRIBUTION_LINES, 0) - 1, -1):
        if not kept[start].strip():
            return
        if _ATTRIBUTION.match(" ".join(line.strip() for line in kept[start:end])):
            del kept[start:]
            return


def _tidy(lines: list[str]) -> str:
    """Trailing spaces off, runs of blank lines made one, no blank lines at either end."""
    text = "\n".join(line.rstrip() for line in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
