"""Who and what a model request serves, without threading arguments through every call.

A run sets the conversation, run and owner once (`attributed`); code that calls the model for
another purpose inside it (compaction, a decision stage, the approval reviewer) names its
purpose (`purpose`) and keeps the rest. Context variables follow `await` and are copied into
tasks the code starts, so a request made anywhere below reads the attribution in force where
it was made. A request made outside any of these is recorded under no conversation as
`other`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, replace

from tobe import telemetry

TURN = "turn"
COMPACTION = "compaction"
EXTRACT = "extract"
EVALUATE = "evaluate"
PLAN = "plan"
REVIEW = "review"
OTHER = "other"


@dataclass(frozen=True)
class Attribution:
    conversation_key: str = ""
    run_id: str = ""
    # The conversation's owner.
    principal: str = ""
    purpose: str = OTHER


_NOBODY = Attribution()
_current: ContextVar[Attribution | None] = ContextVar("usage_attribution", default=None)


def current() -> Attribution:
    return _current.get() or _NOBODY


@contextlib.contextmanager
def attributed(
    conversation_key: str, *, run_id: str = "", principal: str = "", purpose: str = TURN
) -> Iterator[None]:
    """Requests made inside serve this conversation (and run) for `purpose`."""
    token = _current.set(Attribution(conversation_key, run_id, principal, purpose))
    try:
        yield
    finally:
        _current.reset(token)


@contextlib.contextmanager
def purpose(name: str) -> Iterator[None]:
    """Requests made inside are for `name`; the conversation and run stay as they were.

    The block is also a span named `name` (a compaction, a decision stage, a review), so a
    trace shows each of these with its model requests inside."""
    token = _current.set(replace(current(), purpose=name))
    try:
        with telemetry.span(name, attributes={"tobe.purpose": name}):
            yield
    finally:
        _current.reset(token)
