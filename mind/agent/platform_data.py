"""Sensitive data for profile code: a Hand's sensitive tool called from inside a profile tool.

The seed's `dataAccess.query`: a profile's own tool reads a dataset the person authorised. In
ToBe a dataset is read by a Hand's sensitive tool (`ToolSpec.sensitive`, `dataset`), and only
inside a sealed run (`mind.sealing`), so `DataClient.query` works only while the calling tool
runs in its conversation's active run (its `ToolContext` says which) and that run is sealed:
the read is then a call of the run like the model's — admitted, authorised by the approval
policy, executed on the Hand, its arguments and result sealed — and it counts among the
datasets the turn queried, so its values are replaced with the rest of the turn once it ends.

Such a call's id is the calling tool call's id, `~`, and a count: it is never shown to the
model (its result follows no call of the model's), and it never continues after a restart
(`mind.conversation.continuation`): it ends with its run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mind.conversation.continuation import CODE_CALL_MARK
from mind.core.tool_registry import ToolRegistry
from mind.core.tool_runtime import RunScope, ToolRuntime
from mind.profiles.scope import CancelSignal, PlatformRequestError
from mind.providers.base import ToolCall
from mind.tools.base import ToolContext

# The scope of a conversation's active run `run_id`, or None (no such active run).
RunScopeOf = Callable[[str, str], RunScope | None]


@dataclass(frozen=True)
class DataResult:
    """What a read returned: the Hand tool's text (its JSON, usually), or why it failed."""

    dataset: str
    ok: bool
    text: str


class DataClient:
    """A conversation's sensitive datasets, read from its profile's tools."""

    def __init__(
        self,
        key: str,
        signal: CancelSignal,
        run_scope: RunScopeOf,
        registry: ToolRegistry,
        runtime: ToolRuntime,
    ) -> None:
        self._key = key
        self._signal = signal
        self._run_scope = run_scope
        self._registry = registry
        self._runtime = runtime
        self._calls = itertools.count(1)

    async def query(
        self, dataset: str, arguments: dict[str, Any] | None = None, *, context: ToolContext
    ) -> DataResult:
        """Read `dataset` with the arguments its Hand tool takes.

        NOT_FOUND when no tool of the run reads that dataset; FAILED_PRECONDITION when
        `context` is not a call of this conversation's active run, or that run is not sealed
        (it could call no sensitive tool when it started: a Hand came later).
        """
        self._signal.check()
        scope = self._run_scope(self._key, context.run_id)
        if context.conversation_key != self._key or scope is None or not scope.sensitive:
            raise PlatformRequestError("FAILED_PRECONDITION")
        name = next((tool for tool, read in scope.sensitive.items() if read == dataset), None)
        tool = self._registry.tools_for(self._key, scope.profile).get(name or "")
        if tool is None:
            raise PlatformRequestError("NOT_FOUND")
        call = ToolCall(
            id=f"{context.tool_call_id}{CODE_CALL_MARK}{next(self._calls)}",
            name=tool.name,
            arguments=dict(arguments or {}),
        )
        message = await self._runtime.execute(call, tool, scope)
        return DataResult(dataset, not message.is_error, message.text)
