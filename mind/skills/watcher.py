"""Reloads stores (skills, resources) when files under their directories change.

Existing directories are watched recursively with `watchfiles`. A directory that does not
exist yet is waited for by watching its nearest existing ancestor, not recursively, for the
creation of a folder on the way to it; when the set of existing directories changes (one
appears or disappears) the watch starts again on the new set. After every (re)start the
stores are reloaded once the watch is in place, so a file written while it was being set up
is not missed. A reload only swaps a store's catalog: runs read it when they start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from watchfiles import Change, DefaultFilter, awatch

log = logging.getLogger(__name__)

# Quiet time that ends a batch of changes, and the wait after which an idle watch yields
# (the first such yield says the watch is in place).
DEBOUNCE_MS = 300
IDLE_MS = 1000
# Pause before watching again after the watch itself failed (a directory vanished mid-start).
RETRY_SECONDS = 2.0


class Reloadable(Protocol):
    @property
    def dirs(self) -> Sequence[Path]: ...

    def reload(self) -> object: ...


@dataclass(frozen=True)
class Layout:
    """What to watch: existing directories, and the nearest existing ancestors of the others."""

    present: tuple[Path, ...]
    missing: tuple[Path, ...]

    @classmethod
    def of(cls, dirs: Sequence[Path]) -> Layout:
        absolute = sorted({d.absolute() for d in dirs})
        return cls(
            tuple(d for d in absolute if d.is_dir()), tuple(d for d in absolute if not d.is_dir())
        )

    def ancestors(self) -> list[Path]:
        return sorted({next(p for p in d.parents if p.is_dir()) for d in self.missing})

    def on_the_way(self, change: Change, path: str) -> bool:
        """A change to a missing directory or a folder on the way to one."""
        changed = Path(path)
        return any(d == changed or changed in d.parents for d in self.missing)


class DirectoryWatcher:
    def __init__(self, stores: Sequence[Reloadable]) -> None:
        self.stores = list(stores)
        self._task: asyncio.Task[None] | None = None
        # Set to end the current watch (to stop, or to watch a changed layout).
        self._session = asyncio.Event()
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="directory-watcher")

    async def stop(self) -> None:
        self._stopped.set()
        self._session.set()
        if self._task is not None:
            await self._task

    def _layout(self) -> Layout:
        return Layout.of([d for store in self.stores for d in store.dirs])

    async def _run(self) -> None:
        while not self._stopped.is_set():
            layout, self._session = self._layout(), asyncio.Event()
            try:
                await self._watch(layout, self._session)
            except (OSError, RuntimeError) as exc:
                log.warning("watching %s failed: %s; trying again", layout, exc)
                await self._pause(RETRY_SECONDS)

    async def _watch(self, layout: Layout, session: asyncio.Event) -> None:
        streams = []
        if layout.present:
            streams.append(self._stream(layout, session, layout.present, True, DefaultFilter()))
        if layout.missing:
            streams.append(
                self._stream(layout, session, layout.ancestors(), False, layout.on_the_way)
            )
        if not streams:
            await session.wait()
        await asyncio.gather(*streams)

    async def _stream(
        self,
        layout: Layout,
        session: asyncio.Event,
        paths: Sequence[Path],
        recursive: bool,
        only: Callable[[Change, str], bool],
    ) -> None:
        """Reload at the first yield (the watch is in place) and after every batch; end the
        session when the layout changed."""
        first = True
        try:
            async for changes in awatch(
                *paths,
                watch_filter=only,
                recursive=recursive,
                stop_event=session,
                debounce=DEBOUNCE_MS,
                rust_timeout=IDLE_MS,
                yield_on_timeout=True,
            ):
                if changes or first:
                    first = False
                    await self._reload()
                    if self._layout() != layout:
                        session.set()
        finally:
            session.set()

    async def _reload(self) -> None:
        for store in self.stores:
            try:
                await asyncio.to_thread(store.reload)
            except Exception:
                log.exception("reloading %s failed", store.dirs)

    async def _pause(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopped.wait(), seconds)
        except TimeoutError:
            pass
