"""What an input came from: its `source`, typed, and its form in the `inputs.source` column.

Every input of a conversation's queue has one. A person's message stores `{}`; every other
kind stores an object naming its `kind` and what the run it starts needs to know:

* `PostSource`: a message written by code that waits for the active run (`posts`), and
  the card of a widget message;
* `FiringSource`: a scheduled action's firing, which starts a proactive run;
* `ObservationSource`: an observation note from the Awareness sink, with its trust, its
  run's permissions and where it came from (`origins`);
* `DecisionSource`: the owner's decision on a pending action (`mind.agent.action_decisions`).

`to_json`/`from_json` are the only way between the two forms. The stored shapes are fixed:
backups and existing databases hold them, so `to_json` writes exactly the keys, in the order,
that were always written, and `from_json` also reads rows older fields are missing from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

POST = "post"
FIRING = "firing"
OBSERVATION = "observation"
DECISION = "action_decision"


@dataclass(frozen=True)
class PersonSource:
    """A person's message: the run it starts answers them."""


@dataclass(frozen=True)
class PostSource:
    posted_by: str
    # A widget message's card (`WidgetCardView.to_payload`); None for a text post.
    widget: dict[str, Any] | None = None


@dataclass(frozen=True)
class FiringSource:
    firing_id: int
    schedule_id: str
    title: str
    # Which of the firing's proactive runs this input starts (1 = the first).
    attempt: int = 1


@dataclass(frozen=True)
class ObservationSource:
    trust: str = ""
    # Permissions of the run it triggers (the narrowest of the batch).
    permissions: dict[str, bool] = field(default_factory=dict)
    adapters: tuple[str, ...] = ()
    instances: tuple[str, ...] = ()
    source_titles: tuple[str, ...] = ()
    observation_ids: tuple[str, ...] = ()
    publish_seq: int = 0


@dataclass(frozen=True)
class DecisionSource:
    action_id: str
    # A `PendingChoice` value: confirm, cancel or amend.
    decision: str
    # What replaces the action ("" unless the decision amends it).
    amendment: str = ""


InputSource = PersonSource | PostSource | FiringSource | ObservationSource | DecisionSource

PERSON = PersonSource()


def from_person(source: InputSource) -> bool:
    """A person's message, or their decision on a pending action (not code, not the world)."""
    return isinstance(source, PersonSource | DecisionSource)


def to_json(source: InputSource) -> dict[str, Any]:
    """The stored form of `source` (the `inputs.source` column, and a note's payload)."""
    match source:
        case PersonSource():
            return {}
        case PostSource(posted_by, widget):
            post: dict[str, Any] = {"kind": POST, "posted_by": posted_by}
            if widget is not None:
                post["widget"] = widget
            return post
        case FiringSource(firing_id, schedule_id, title, attempt):
            return {
                "kind": FIRING,
                "firing_id": firing_id,
                "schedule_id": schedule_id,
                "title": title,
                "attempt": attempt,
            }
        case ObservationSource():
            return {
                "kind": OBSERVATION,
                "trust": source.trust,
                "permissions": dict(source.permissions),
                "adapters": list(source.adapters),
                "instances": list(source.instances),
                "source_titles": list(source.source_titles),
                "observation_ids": list(source.observation_ids),
                "publish_seq": source.publish_seq,
            }
        case DecisionSource(action_id, decision, amendment):
            stored: dict[str, Any] = {
                "kind": DECISION,
                "action_id": action_id,
                "decision": decision,
            }
            if amendment:
                stored["amendment"] = amendment
            return stored


def from_json(stored: dict[str, Any] | None) -> InputSource:
    """The source a stored `inputs.source` holds; ValueError for a kind no Mind writes."""
    if not stored:
        return PERSON
    kind = stored.get("kind", "")
    if kind == POST:
        return PostSource(str(stored["posted_by"]), stored.get("widget"))
    if kind == FIRING:
        return FiringSource(
            int(stored["firing_id"]),
            str(stored["schedule_id"]),
            str(stored["title"]),
            int(stored.get("attempt", 1)),
        )
    if kind == OBSERVATION:
        return ObservationSource(
            trust=str(stored.get("trust") or ""),
            permissions={str(k): bool(v) for k, v in (stored.get("permissions") or {}).items()},
            adapters=_names(stored.get("adapters")),
            instances=_names(stored.get("instances")),
            source_titles=_names(stored.get("source_titles")),
            observation_ids=_names(stored.get("observation_ids")),
            publish_seq=int(stored.get("publish_seq") or 0),
        )
    if kind == DECISION:
        return DecisionSource(
            str(stored["action_id"]), str(stored["decision"]), str(stored.get("amendment", ""))
        )
    raise ValueError(f"an input source of unknown kind {kind!r}")


def _names(values: Any) -> tuple[str, ...]:
    return tuple(str(value) for value in values or ())
