"""What started a run, in words a person deciding on its approval requests reads.

Set when the run starts, from its input's source, and kept by the runs that continue it
(`runs.origin`, copied to each approval request). An observation's origin names its trust and
where it came from (instances and source titles, as the Awareness sink records them in the
input's source), never its content: "a medium-trust observation from email@work (INBOX)". A
person's message has none.
"""

from __future__ import annotations

from collections.abc import Iterable

from mind.conversation.sources import InputSource, ObservationSource

# Names shown per list, and characters per name: an adapter chooses them.
MAX_NAMES = 5
MAX_NAME = 80


def describe(source: InputSource) -> str:
    """The origin of a run started by an input with this source; "" for a person's."""
    if not isinstance(source, ObservationSource):
        return ""
    trust = source.trust or "unspecified"
    count = len(source.observation_ids) or 1
    text = f"a {trust}-trust observation" if count == 1 else f"{count} {trust}-trust observations"
    instances = _names(source.instances or source.adapters)
    if instances:
        text += f" from {instances}"
    titles = _names(source.source_titles)
    if titles:
        text += f" ({titles})"
    return text


def _names(values: Iterable[str]) -> str:
    names = [_one_line(value)[:MAX_NAME] for value in values if value.strip()]
    shown = ", ".join(names[:MAX_NAMES])
    more = len(names) - MAX_NAMES
    return f"{shown} and {more} more" if more > 0 else shown


def _one_line(name: str) -> str:
    return " ".join("".join(c if c.isprintable() else " " for c in name).split())
