"""The decision text: what a person reads when a tool call waits for their approval.

A person can't decide on what they can't see, so this text goes with every approval request
in every detail mode (summary included). It is built from the call's arguments with sensitive
values masked (`mind.tools.masking`): the tool's own rendering when it is a `DecisionRenderer`
(for a Hand tool, its declared decision template), else the tool name and the arguments as
compact JSON. Anything that looks like a credential is then masked; control and invisible
formatting characters are written as escapes (`\\x1b`, `\\u202e`), so nothing in the text can
hide or reorder the rest on a terminal; and a text longer than `DECISION_LIMIT` characters is
cut, followed by a marker saying how many characters were cut.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from typing import Any

from mind.tools.base import DecisionRenderer, Tool
from mind.tools.masking import masked_arguments
from tobe.runtime.redact import redact

log = logging.getLogger(__name__)

# Characters of decision text kept before the cut marker (documented in common.proto).
DECISION_LIMIT = 2000


def default_decision(tool_name: str, arguments: dict[str, Any]) -> str:
    """`name {"argument":value,…}`: for tools that write no text of their own."""
    return f"{tool_name} {json.dumps(arguments, ensure_ascii=False, separators=(',', ':'))}"


def _visible(character: str) -> str:
    if character in "\n\t" or unicodedata.category(character) not in ("Cc", "Cf"):
        return character
    code = ord(character)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown_decision(text: str, limit: int = DECISION_LIMIT) -> str:
    """`text` with invisible characters escaped, cut after `limit` characters with a marker
    saying how many characters of `text` were cut."""
    pieces: list[str] = []
    length = 0
    for index, character in enumerate(text):
        piece = _visible(character)
        if length + len(piece) > limit:
            return "".join(pieces) + f"… [{len(text) - index} more characters cut]"
        pieces.append(piece)
        length += len(piece)
    return "".join(pieces)


def _own_text(tool: Tool, arguments: dict[str, Any]) -> str:
    if not isinstance(tool, DecisionRenderer):
        return ""
    try:
        return tool.render_decision(arguments)
    except Exception as exc:  # a broken renderer must not hide the call: show the default
        log.warning("tool %s could not write its decision text: %s", tool.name, type(exc).__name__)
        return ""


def decision_text(tool: Tool, arguments: dict[str, Any]) -> str:
    """The text a person decides on for this call of `tool` (see the module docstring)."""
    shown = masked_arguments(arguments, tool.parameters)
    text = _own_text(tool, shown) or default_decision(tool.name, shown)
    return shown_decision(redact(text))
