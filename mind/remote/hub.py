"""The HandHub: which Hands are attached right now, and the outbound frames queued for each.

A Hand name is held by at most one stream. A credential may attach only under a name it was
given: its principal, or a name in one of its `hand:<name>` scopes (`granted_names`), so a
credential cannot take a free name meant for another Hand. A reconnect of the same Hand (same
credential, same instance id) replaces the old stream, which may not have noticed yet that the
network dropped. Another Hand asking for a name in use is refused, so a second Hand started
under a name by mistake never silently takes it over; one of the same principal that asks to
`replace` takes it over, and another principal's never does, so one Hand credential cannot take
over another's tasks.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from mind.errors import AlreadyExists
from mind.remote.model import AckStatus, ReconcileVerdict, ReportKind, TaskRecord, ToolDecl
from mind.store.models import utcnow
from tobe.scopes import HAND_PREFIX, SERVE_ALL, SERVE_PREFIX
from tobe.telemetry import instruments

log = logging.getLogger(__name__)

HAND_NAME = re.compile(r"^[a-z][a-z0-9-]{0,14}$")
TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,46}$")


class HandNameTaken(AlreadyExists):
    """Another Hand is attached under this name (and this one may not, or did not ask to,
    replace it)."""


class CloseReason(StrEnum):
    # A newer stream of the same Hand took over.
    REPLACED = "replaced"
    # The Hand ended its side of the stream, or it failed.
    ENDED = "ended"
    # No frame from the Hand within the heartbeat timeout.
    SILENT = "silent"
    # The Mind is stopping; the Hand should reconnect later.
    SHUTDOWN = "shutdown"
    # The Hand broke the protocol (a second hello): FAILED_PRECONDITION.
    PROTOCOL = "protocol"
    # The Hand sent an invalid frame after its hello (a bad tool set): INVALID_ARGUMENT.
    INVALID = "invalid"


@dataclass(frozen=True)
class OfferFrame:
    task: TaskRecord
    accept_timeout: float
    run_timeout: float
    # The offering tool call's W3C trace context (`tobe.telemetry.carrier`); empty when off.
    trace_context: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CancelFrame:
    task_id: str
    attempt: int
    reason: str


@dataclass(frozen=True)
class AckFrame:
    task_id: str
    attempt: int
    status: AckStatus
    message: str
    # The report this ack answers: its kind, and the sequence number the Hand gave it.
    kind: ReportKind
    seq: int


@dataclass(frozen=True)
class PingFrame:
    """Asks a quiet Hand for a sign of life."""


@dataclass(frozen=True)
class CloseFrame:
    reason: CloseReason
    message: str


Outbound = OfferFrame | CancelFrame | AckFrame | PingFrame | ReconcileVerdict | CloseFrame


def granted_names(principal: str, scopes: Iterable[str]) -> frozenset[str]:
    """The Hand names a credential may attach under: its principal and every `hand:<name>`."""
    names = {principal}
    names.update(s.removeprefix(HAND_PREFIX) for s in scopes if s.startswith(HAND_PREFIX))
    return frozenset(names)


def served_principals(principal: str, scopes: Iterable[str]) -> frozenset[str]:
    """Whose conversations a Hand credential serves: its own principal, every `serve:<name>`
    scope, and everyone with `serve-all`. A device executes only for people it was given to."""
    served = {principal}
    for scope in scopes:
        if scope == SERVE_ALL:
            served.add("*")
        elif scope.startswith(SERVE_PREFIX):
            served.add(scope.removeprefix(SERVE_PREFIX))
    return frozenset(served)


@dataclass(frozen=True)
class ToolChange:
    """What a new tool set changed, by tool name (for the log)."""

    added: list[str]
    removed: list[str]
    # Declared before and now, with another description, schema, effect or template.
    changed: list[str]

    def __str__(self) -> str:
        parts = [
            f"{label} {', '.join(names)}"
            for label, names in (
                ("added", self.added),
                ("removed", self.removed),
                ("changed", self.changed),
            )
            if names
        ]
        return "; ".join(parts) or "no difference"


@dataclass(eq=False)
class HandConnection:
    """One attached Hand stream."""

    name: str
    principal: str
    credential_id: str
    version: str
    tools: dict[str, ToolDecl]
    # The Hand process's id from its hello ("" when it sent none); see `HandHub.attach`.
    instance_id: str = ""
    # Principals whose conversations may use this Hand ("*": everyone); see `served_principals`.
    serves: frozenset[str] = frozenset()
    # Its result for a task still offered accepts the task too (`HandHello.result_accepts`).
    result_accepts: bool = False
    # Reads and is sent batched frames (`HandHello.batches`).
    batches: bool = False
    hand_id: str = field(default_factory=lambda: f"h_{uuid.uuid4().hex[:16]}")
    connected_at: datetime = field(default_factory=utcnow)
    _outbox: asyncio.Queue[Outbound] = field(default_factory=asyncio.Queue)
    closed: CloseFrame | None = None

    def replace_tools(self, tools: dict[str, ToolDecl]) -> ToolChange:
        """Take a new tool set (a `tools_changed`) in one assignment: a run lists the Hand's
        tools once when it starts, so it sees either the old set or the new one, never a mix."""
        before, self.tools = self.tools, tools
        return ToolChange(
            added=sorted(tools.keys() - before.keys()),
            removed=sorted(before.keys() - tools.keys()),
            changed=sorted(n for n in tools.keys() & before.keys() if tools[n] != before[n]),
        )

    def may_serve(self, audience: Iterable[str]) -> bool:
        """True when a conversation with this audience (owner and members) may use the Hand."""
        return "*" in self.serves or not self.serves.isdisjoint(audience)

    def send(self, frame: Outbound) -> bool:
        """Queue a frame for the Hand; False when the stream is already closing."""
        if self.closed is not None:
            return False
        self._outbox.put_nowait(frame)
        return True

    def close(self, reason: CloseReason, message: str) -> None:
        if self.closed is None:
            self.closed = CloseFrame(reason, message)
            self._outbox.put_nowait(self.closed)

    async def next_frame(self) -> Outbound:
        return await self._outbox.get()

    async def next_frames(self, limit: int) -> list[Outbound]:
        """The next frame and up to `limit - 1` more already queued (one batch); a close
        frame ends the batch."""
        frames = [await self._outbox.get()]
        while len(frames) < limit and not isinstance(frames[-1], CloseFrame):
            try:
                frames.append(self._outbox.get_nowait())
            except asyncio.QueueEmpty:
                break
        return frames


class HandHub:
    """Attached Hands by name."""

    def __init__(self) -> None:
        self._by_name: dict[str, HandConnection] = {}

    def attach(self, connection: HandConnection, *, replace: bool = False) -> HandConnection | None:
        """Register a stream; returns the stream it replaced, if any.

        A name in use goes to the newcomer only when it is the same Hand reconnecting, or a
        Hand of the same principal asking to `replace` it; else HandNameTaken."""
        current = self.get(connection.name)
        if current is not None:
            reason = _takeover(current, connection, replace)
            current.close(CloseReason.REPLACED, reason)
        if connection.name not in self._by_name:
            instruments.hands_attached.add(1)
        self._by_name[connection.name] = connection
        log.info(
            "hand %s attached (%s, %d tools)",
            connection.name,
            connection.hand_id,
            len(connection.tools),
        )
        return current

    def detach(self, connection: HandConnection) -> bool:
        """Forget a stream; False when a newer stream already holds the name."""
        if self._by_name.get(connection.name) is not connection:
            return False
        del self._by_name[connection.name]
        instruments.hands_attached.add(-1)
        log.info("hand %s detached (%s)", connection.name, connection.hand_id)
        return True

    def get(self, name: str) -> HandConnection | None:
        """The open stream holding `name` (one that is closing no longer counts)."""
        connection = self._by_name.get(name)
        return connection if connection is not None and connection.closed is None else None

    def connections(self) -> list[HandConnection]:
        return [c for c in self._by_name.values() if c.closed is None]


def _takeover(current: HandConnection, new: HandConnection, replace: bool) -> str:
    """Why `new` may take `current`'s name (the message `current` ends with); HandNameTaken
    when it may not. The same credential and instance id is the same Hand reconnecting: its
    old stream may still look alive here for up to the heartbeat timeout after a network drop.
    Hands that send no instance id cannot be told apart: between two of them the same
    principal counts as the same Hand (the rule before instance ids)."""
    since = f"attached since {current.connected_at:%Y-%m-%d %H:%M:%S} UTC"
    if current.principal != new.principal:
        raise HandNameTaken(
            f"the Hand name {new.name!r} is held by a live Hand of another principal ({since}); "
            "only a Hand of the same principal may replace it"
        )
    unidentified = not current.instance_id and not new.instance_id
    same_instance = (current.credential_id, current.instance_id) == (
        new.credential_id,
        new.instance_id,
    )
    if unidentified or same_instance:
        return "a newer stream of this Hand attached"
    if not replace:
        raise HandNameTaken(
            f"the Hand name {new.name!r} is held by a live Hand ({since}, {current.hand_id})"
        )
    log.warning("hand %s: %s replaces %s", new.name, new.hand_id, current.hand_id)
    return f"another Hand ({new.hand_id}) took the name {new.name!r} over (replace)"
