"""What started a run, in words a person deciding on its approval requests reads.

Set when the run starts, from its input's source, and kept by the runs that continue it
(`runs.origin`, copied to each approval request). An observation's origin names its trust and
where it came from (instances and source titles, as the Awareness sink records them in the
input's source), never its content: "a medium-trust observation from email@work (INBOX)". A
person's message has none.
"""

from __future__ import annotations

from typing import Any

OBSERVATION = "observation"
# Names shown per list, and characters per name: an adapter chooses them.
MAX_NAMES = 5
MAX_NAME = 80


def describe(source: dict[str, Any]) -> str:
    """The origin of a run started by an input with this source; "" for a person's."""
    if source.get("kind") != OBSERVATION:
        return ""
    trust = str(source.get("trust") or "unspecified")
    count = len(source.get("observation_ids") or ()) or 1
    text = f"a {trust}-trust observation" if count == 1 else f"{count} {trust}-trust observations"
    instances = _names(source.get("instances") or source.get("adapters") or ())
    if instances:
        text += f" from {instances}"
    titles = _names(source.get("source_titles") or ())
    if titles:
        text += f" ({titles})"
    return text


def _names(values: Any) -> str:
    names = [_one_line(str(value))[:MAX_NAME] for value in values if str(value).strip()]
    shown = ", ".join(names[:MAX_NAMES])
    more = len(names) - MAX_NAMES
    return f"{shown} and {more} more" if more > 0 else shown


def _one_line(name: str) -> str:
    return " ".join("".join(c if c.isprintable() else " " for c in name).split())
