"""Several execution ledgers as one: a call's execution is a Hand task or a child run.

The tool runtime asks one `ExecutionLedger`; each call has at most one execution, so the
first ledger that recorded the call answers for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mind.core.tool_runtime import ExecutionLedger
from mind.tools.base import ToolOutcome


class Ledgers:
    """The runtime's `ExecutionLedger` over `parts`, asked in order."""

    def __init__(self, parts: Sequence[ExecutionLedger]) -> None:
        self.parts = list(parts)

    async def _holder(self, tool_call_id: str) -> ExecutionLedger | None:
        for part in self.parts:
            if await part.recorded(tool_call_id):
                return part
        return None

    async def recorded(self, tool_call_id: str) -> bool:
        return await self._holder(tool_call_id) is not None

    async def ended(self, tool_call_id: str) -> ToolOutcome | None:
        holder = await self._holder(tool_call_id)
        return None if holder is None else await holder.ended(tool_call_id)

    async def outcome(
        self, tool_call_id: str, report_progress: Callable[[str, float | None], None]
    ) -> ToolOutcome | None:
        holder = await self._holder(tool_call_id)
        return None if holder is None else await holder.outcome(tool_call_id, report_progress)
