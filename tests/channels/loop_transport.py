"""A network in the test's memory, speaking the transport contract: what people send goes in
`say`/`react`, what the channel sends and edits is kept per thread, as a chat app shows it."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from face.channels.transport import Image, Inbound


@dataclass
class LoopTransport:
    name: str = "matrix"
    edits: bool = True
    # Network message id → its text as shown now, in the order they were sent.
    shown: dict[str, str] = field(default_factory=dict)
    threads: dict[str, list[str]] = field(default_factory=dict)
    images: dict[str, tuple[Image, ...]] = field(default_factory=dict)
    handled_ids: list[str] = field(default_factory=list)
    typing_shown: list[bool] = field(default_factory=list)
    edit_count: int = 0
    _keys: dict[str, str] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _items: asyncio.Queue[Inbound] = field(default_factory=asyncio.Queue)
    _unhandled: list[Inbound] = field(default_factory=list)

    async def start(self) -> None:
        # A restarted channel gets again what it had not acknowledged.
        for item in self._unhandled:
            self._items.put_nowait(item)
        self._unhandled = []

    async def close(self) -> None:
        while not self._items.empty():
            self._unhandled.append(self._items.get_nowait())

    async def inbound(self) -> AsyncIterator[Inbound]:
        while True:
            item = await self._items.get()
            self._unhandled.append(item)
            yield item

    async def handled(self, item: Inbound) -> None:
        self._unhandled = [i for i in self._unhandled if i.id != item.id]
        self.handled_ids.append(item.id)

    async def send(
        self, thread: str, text: str, *, key: str, images: tuple[Image, ...] = ()
    ) -> str:
        if key in self._keys:  # the network's own deduplication (a Matrix transaction id)
            return self._keys[key]
        message_id = f"$m{next(self._ids)}"
        self._keys[key] = message_id
        self.shown[message_id] = text
        self.images[message_id] = images
        self.threads.setdefault(thread, []).append(message_id)
        return message_id

    async def edit(self, thread: str, message_id: str, text: str) -> None:
        assert message_id in self.threads[thread]
        self.shown[message_id] = text
        self.edit_count += 1

    async def typing(self, thread: str, active: bool) -> None:
        self.typing_shown.append(active)

    def say(self, item: Inbound) -> None:
        self._items.put_nowait(item)

    def texts(self, thread: str) -> list[str]:
        return [self.shown[m] for m in self.threads.get(thread, [])]

    def threads_shown(self) -> dict[str, list[str]]:
        return {thread: self.texts(thread) for thread in self.threads}
