"""A test adapter whose failures the test controls through files in its `data/`.

- `hang_start`: `start` never returns (it ignores nothing: a cancel ends it);
- `fail_start`: `start` raises;
- `crash`: `run` raises once (the file is removed first).
Each start is recorded in `data/starts.json` (the `starts` read action shows them); the write
action `report` calls `context.fail` from a thread, as a client library's callback would.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from awareness.adapter import Action, Adapter, Effect


class Flaky(Adapter):
    description = "Fails on demand (tests of the supervisor)."

    def read_actions(self) -> list[Action]:
        return [Action("starts", "The monotonic times of every start.", self._starts)]

    def write_actions(self) -> list[Action]:
        return [
            Action(
                "report",
                "Report a failure from another thread.",
                self._report,
                effect=Effect.WORKSPACE_WRITE,
            )
        ]

    async def start(self) -> None:
        starts = self.context.load_json("starts.json") or []
        self.context.save_json("starts.json", [*starts, time.time()])
        if self.context.data_path("hang_start").exists():
            await asyncio.Event().wait()
        if self.context.data_path("fail_start").exists():
            raise ConnectionRefusedError("cannot reach the service")

    async def run(self) -> None:
        crash = self.context.data_path("crash")
        while True:
            if crash.exists():
                crash.unlink()
                raise ConnectionResetError("connection lost")
            await asyncio.sleep(0.05)

    async def _starts(self, args: dict[str, Any]) -> list[float]:
        return list(self.context.load_json("starts.json") or [])

    async def _report(self, args: dict[str, Any]) -> dict[str, Any]:
        thread = threading.Thread(target=self.context.fail, args=("the session expired",))
        thread.start()
        thread.join()
        return {"reported": True}


ADAPTER = Flaky
