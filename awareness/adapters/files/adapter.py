"""Files: watches one folder by polling; new and changed files arrive as media (actor `signal`).

Files present when the watch first starts are a baseline, not news. A file is reported once
its size and modification time are the same in two consecutive scans, so half-written files
are not picked up. What has been reported is kept in `data/seen.json` across restarts.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
from pathlib import Path
from typing import Any

from awareness.adapter import Action, Adapter, AdapterContext, MediaInput

Stamp = tuple[int, int]  # (size, mtime_ns)
SEEN = "seen.json"  # in data/


class FilesAdapter(Adapter):
    description = "Watches a folder and reports new, changed and removed files."
    auto_start = False

    def __init__(self, context: AdapterContext) -> None:
        super().__init__(context)
        config = context.config
        self.folder = Path(config["folder"]) if config["folder"] else None
        self.pattern = config["pattern"]
        self.poll_seconds = float(config["poll_seconds"])
        self.max_file_bytes = config["max_file_bytes"]
        self.trust = config["trust"]
        self._pending: dict[str, Stamp] = {}

    def read_actions(self) -> list[Action]:
        return [Action("list", "Files in the watched folder matching the pattern.", self._list)]

    async def start(self) -> None:
        if self.folder is None or not self.folder.is_absolute():
            raise ValueError("config field folder must be set to an absolute path")
        if not self.folder.is_dir():
            raise ValueError("config field folder does not name an existing directory")
        if self.context.load_json(SEEN) is None:
            self._save_seen(await asyncio.to_thread(self._scan))

    async def run(self) -> None:
        """The supervised loop (`awareness.supervisor`): an error here restarts the adapter."""
        while True:
            await asyncio.sleep(self.poll_seconds)
            current = await asyncio.to_thread(self._scan)
            self._report(current)

    def _scan(self) -> dict[str, Stamp]:
        assert self.folder is not None
        found: dict[str, Stamp] = {}
        with os.scandir(self.folder) as entries:
            for entry in entries:
                if entry.is_file() and fnmatch.fnmatch(entry.name, self.pattern):
                    info = entry.stat()
                    found[entry.name] = (info.st_size, info.st_mtime_ns)
        return found

    def _report(self, current: dict[str, Stamp]) -> None:
        seen = self._load_seen()
        for name in sorted(set(seen) - set(current)):
            del seen[name]
            self._emit({"event": "removed", "name": name}, [])
        for name, stamp in sorted(current.items()):
            if seen.get(name) == stamp:
                continue
            if self._pending.get(name) != stamp:
                self._pending[name] = stamp
                continue
            del self._pending[name]
            event = "changed" if name in seen else "created"
            seen[name] = stamp
            self._emit_file(event, name, stamp)
        self._save_seen(seen)

    def _emit_file(self, event: str, name: str, stamp: Stamp) -> None:
        assert self.folder is not None
        size = stamp[0]
        content: dict[str, Any] = {"event": event, "name": name, "size_bytes": size}
        media = []
        if size <= self.max_file_bytes:
            media.append(MediaInput(filename=name, path=self.folder / name))
        else:
            content["too_large_for_media"] = True
        self._emit(content, media)

    def _emit(self, content: dict[str, Any], media: list[MediaInput]) -> None:
        self.context.emit(actor="signal", trust=self.trust, content=content, media=media)

    def _load_seen(self) -> dict[str, Stamp]:
        seen: dict[str, list[int]] = self.context.load_json(SEEN) or {}
        return {name: (stamp[0], stamp[1]) for name, stamp in seen.items()}

    def _save_seen(self, seen: dict[str, Stamp]) -> None:
        self.context.save_json(SEEN, seen)

    async def _list(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.folder is None or not self.folder.is_dir():
            return {"folder": str(self.folder or ""), "files": []}
        files = await asyncio.to_thread(self._scan)
        return {
            "folder": str(self.folder),
            "files": [{"name": n, "size_bytes": s[0]} for n, s in sorted(files.items())],
        }


ADAPTER = FilesAdapter
