"""The platform capabilities profile code gets, bound to one conversation and its signal.

The factory (`mind.profiles.factory`) is given a `ConversationInfo` whose `platform` is a
`ConversationPlatform` and whose `signal` fires when the conversation's run is cancelled or
stopped, when the conversation is deleted and when its actor is evicted (the actor closes its
`ConversationScope`). Tools the factory makes keep both in their closures:

- `widgets`: the conversation's widgets through the widget domain (`mind.widgets.widgets`),
  the same operations the model's widget tools use; `send` posts the widget's card on the
  conversation's ordered queue exactly as `widget_send` does. `with_signal(s)` gives a client
  that either signal cancels: a call started after it fired, or in flight when it fired, raises
  `PlatformCancelled`, and a write checks the signals once more inside its unit, so a write
  whose signal fired before the commit is rolled back.
- `messages`: `send` puts an assistant message on the same queue (`Messages.post`, the path
  of Mind.PostMessage): after the active run's messages, before any later input's run. It
  returns once the message is queued, without waiting for the run to end.
- `memory`: the conversation's memory through the memory domain (`mind.memory.store`), with
  its key rules and quotas.
- `clock`: the Mind's clock and the owner's time zone.
- `data`: a dataset the person authorised, read by the Hand's sensitive tool from inside a
  profile tool of a sealed run (`mind.agent.platform_data`).

Every failure raises `PlatformRequestError` with only a status code name; once the scope
closed, every call raises `PlatformCancelled`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from sqlalchemy.orm import Session

from mind.agent.platform_data import DataClient, RunScopeOf
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import ToolRuntime
from mind.errors import MindError
from mind.memory.store import MemoryEntryView, delete_entry, listing, write_entry
from mind.profiles.scope import (
    CancelSignal,
    PlatformRequestError,
    any_of,
    code_of,
)
from mind.scheduler.model import Clock
from mind.store.database import Database
from mind.store.write_tx import WriteTx
from mind.widgets import widgets as domain
from mind.widgets.tools import WIDGET_POSTER, card, message_text
from mind.widgets.widgets import WidgetRecordView, WidgetView

log = logging.getLogger(__name__)

T = TypeVar("T")

# Who a message that profile code sends is posted by (`posted_by`).
PROFILE_POSTER = "profile"
# The kinds of message `messages.send` posts; a widget goes through `widgets.send`.
MESSAGE_KINDS = ("message",)


class Poster(Protocol):
    """`Messages.post`: an assistant message on a conversation's ordered queue."""

    def __call__(
        self,
        key: str,
        text: str,
        idempotency_key: str,
        *,
        posted_by: str,
        widget: dict[str, Any] | None = None,
    ) -> Awaitable[object]: ...


class _Door:
    """One conversation's store calls under a signal, refusals turned into status codes."""

    def __init__(self, database: Database, signal: CancelSignal) -> None:
        self.database = database
        self.signal = signal

    async def read(self, query: Callable[[Session], T]) -> T:
        self.signal.check()
        value = await self.call(self.database.read(query))
        self.signal.check()
        return value

    async def write(self, unit: Callable[[WriteTx], T]) -> T:
        signal = self.signal

        def guarded(tx: WriteTx) -> T:
            signal.check()
            value = unit(tx)
            signal.check()  # fired while the unit ran: roll it back
            return value

        signal.check()
        return await self.call(self.database.write(guarded))

    async def call(self, work: Awaitable[T]) -> T:
        try:
            return await work
        except PlatformRequestError:
            raise
        except MindError as exc:
            raise PlatformRequestError(code_of(exc)) from None
        except Exception:
            log.exception("a platform call of profile code failed")
            raise PlatformRequestError("INTERNAL") from None


def _required_key(idempotency_key: str) -> None:
    if not idempotency_key:
        raise PlatformRequestError("INVALID_ARGUMENT")


class WidgetsClient:
    """The conversation's widgets (see the module docstring)."""

    def __init__(self, key: str, door: _Door, post: Poster) -> None:
        self._key = key
        self._door = door
        self._post = post

    def with_signal(self, signal: CancelSignal) -> WidgetsClient:
        """A client that `signal` cancels as well as this one's."""
        door = _Door(self._door.database, any_of(self._door.signal, signal))
        return WidgetsClient(self._key, door, self._post)

    async def list(self) -> list[WidgetView]:
        return await self._door.read(lambda session: domain.list_widgets(session, self._key))

    async def read(self, widget_id: str) -> WidgetView:
        return await self._door.read(
            lambda session: domain.read_widget(session, self._key, widget_id)
        )

    async def read_module(self, widget_id: str, module: str) -> tuple[WidgetRecordView, ...]:
        widget = await self.read(widget_id)
        return tuple(record for record in widget.records if record.module == module)

    async def create(self, type_name: str, title: str, idempotency_key: str | None = None) -> str:
        """A new widget's id; the same key again answers the widget made then."""
        made = await self._door.write(
            lambda tx: domain.create_widget(
                tx, self._key, type_name, title, idempotency_key=idempotency_key
            )
        )
        return made.id

    async def rename(self, widget_id: str, title: str) -> None:
        await self._door.write(lambda tx: domain.rename_widget(tx, self._key, widget_id, title))

    async def write(
        self,
        widget_id: str,
        module: str,
        record_id: str,
        data: Any,
        expected_revision: int | None = None,
    ) -> int:
        """Write one record; its new revision (FAILED_PRECONDITION for a stale expectation)."""
        record = await self._door.write(
            lambda tx: domain.write_record(
                tx,
                self._key,
                widget_id,
                module,
                record_id,
                data,
                expected_revision=expected_revision,
            )
        )
        return record.revision

    async def delete_record(self, widget_id: str, module: str, record_id: str) -> bool:
        return await self._door.write(
            lambda tx: domain.delete_record(tx, self._key, widget_id, module, record_id)
        )

    async def set_presentation(
        self, widget_id: str, summary: str | None = None, cover_digest: str | None = None
    ) -> None:
        """The card's summary and cover (a stored image's digest, "" removes it); None keeps."""
        await self._door.write(
            lambda tx: domain.set_presentation(
                tx, self._key, widget_id, summary=summary, cover=cover_digest
            )
        )

    async def send(self, widget_id: str, idempotency_key: str = "") -> None:
        """Queue the widget's card after the active run's messages, once per key."""
        _required_key(idempotency_key)
        widget = await self.read(widget_id)
        self._door.signal.check()
        await self._door.call(
            self._post(
                self._key,
                message_text(widget),
                idempotency_key,
                posted_by=WIDGET_POSTER,
                widget=card(widget).to_payload(),
            )
        )


class MessagesClient:
    def __init__(self, key: str, door: _Door, post: Poster) -> None:
        self._key = key
        self._door = door
        self._post = post

    async def send(self, text: str, kind: str = "message", idempotency_key: str = "") -> None:
        """Queue an assistant message after the active run's messages, once per key."""
        _required_key(idempotency_key)
        if kind not in MESSAGE_KINDS:
            raise PlatformRequestError("INVALID_ARGUMENT")
        self._door.signal.check()
        await self._door.call(
            self._post(self._key, text, idempotency_key, posted_by=PROFILE_POSTER)
        )


class MemoryClient:
    """The conversation's memory, with the memory tools' key rules and quotas."""

    def __init__(self, key: str, door: _Door) -> None:
        self._key = key
        self._door = door

    async def list(self) -> list[MemoryEntryView]:
        found = await self._door.read(lambda session: listing(session, self._key))
        return list(found.entries)

    async def read(self, key: str) -> str | None:
        return next((entry.text for entry in await self.list() if entry.key == key), None)

    async def write(self, key: str, text: str) -> None:
        await self._door.write(lambda tx: write_entry(tx, self._key, key, text, run_id=""))

    async def delete(self, key: str) -> bool:
        """Whether it existed; a missing key is already gone."""
        return await self._door.write(lambda tx: delete_entry(tx, self._key, key, run_id=""))


@dataclass(frozen=True)
class PlatformClock:
    clock: Clock
    # The owner's IANA time zone ("": unknown).
    time_zone: str

    def now(self) -> datetime:
        return self.clock.now()


@dataclass(frozen=True)
class ConversationPlatform:
    key: str
    widgets: WidgetsClient
    messages: MessagesClient
    memory: MemoryClient
    clock: PlatformClock
    data: DataClient


@dataclass(frozen=True)
class ConversationScope:
    """What one factory call is given: the platform and the signal that closes it."""

    platform: ConversationPlatform
    signal: CancelSignal

    def close(self, reason: str) -> None:
        """Fire the signal: every call of this platform from now on raises PlatformCancelled."""
        self.signal.cancel(reason)


@dataclass(frozen=True)
class RunTools:
    """What the data client calls a sensitive tool with: the active runs' scopes, the tools."""

    scope_of: RunScopeOf
    registry: ToolRegistry
    runtime: ToolRuntime


class PlatformScopes:
    """Opens a conversation's scope each time its profile is made."""

    def __init__(
        self,
        database: Database,
        post: Poster,
        clock: Clock,
        time_zone_of: Callable[[str], str],
        runs: RunTools,
    ) -> None:
        self._database = database
        self._post = post
        self._clock = clock
        self._time_zone_of = time_zone_of
        self._runs = runs

    def open(self, key: str, owner: str) -> ConversationScope:
        signal = CancelSignal()
        door = _Door(self._database, signal)
        platform = ConversationPlatform(
            key,
            WidgetsClient(key, door, self._post),
            MessagesClient(key, door, self._post),
            MemoryClient(key, door),
            PlatformClock(self._clock, self._time_zone_of(owner)),
            DataClient(key, signal, self._runs.scope_of, self._runs.registry, self._runs.runtime),
        )
        return ConversationScope(platform, signal)
