"""The tool-call envelope: every engine or adapter call ends as a `CallResult`.

Contract: these functions never raise for adapter or engine failures; they return a result
whose `content.status` is "error" with a message safe to show (no sensitive values).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from awareness.engine import Engine
from awareness.errors import AwarenessError
from awareness.model import CallResult

ENGINE_READ_ACTIONS = ("list_adapters", "drain")
DEFAULT_DRAIN_LIMIT = 50
MAX_DRAIN_LIMIT = 500


async def _envelope(
    call_id: str, adapter_id: str, action: str, body: Callable[[], Awaitable[dict[str, Any]]]
) -> CallResult:
    try:
        content = {"status": "success", **await body()}
    except AwarenessError as exc:
        content = {"status": "error", "error": str(exc)}
    return CallResult(call_id, adapter_id, action, datetime.now(UTC), content)


async def observe(
    engine: Engine, call_id: str, adapter_id: str, action: str, args: dict[str, Any]
) -> CallResult:
    """A read action of an adapter, or without adapter_id an engine action."""

    async def body() -> dict[str, Any]:
        if adapter_id:
            return {"result": await engine.call(adapter_id, action, args, write=False)}
        if action == "list_adapters":
            return {"adapters": [a.describe() for a in engine.adapters()]}
        if action == "drain":
            return {"observations": _drain(engine, args)}
        raise AwarenessError(
            f"unknown engine action {action!r}; without adapter_id use one of "
            f"{', '.join(ENGINE_READ_ACTIONS)}"
        )

    return await _envelope(call_id, adapter_id, action, body)


def _drain(engine: Engine, args: dict[str, Any]) -> list[dict[str, Any]]:
    limit = args.get("limit", DEFAULT_DRAIN_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_DRAIN_LIMIT:
        raise AwarenessError(f"drain: limit must be an integer from 1 to {MAX_DRAIN_LIMIT}")
    return [
        {**o.as_dict(), "publish_seq": b.publish_seq}
        for b in engine.drain(limit)
        for o in b.observations
    ]


async def interact(
    engine: Engine, call_id: str, adapter_id: str, action: str, args: dict[str, Any]
) -> CallResult:
    async def body() -> dict[str, Any]:
        return {"result": await engine.call(adapter_id, action, args, write=True)}

    return await _envelope(call_id, adapter_id, action, body)


async def register(engine: Engine, call_id: str, name: str) -> CallResult:
    async def body() -> dict[str, Any]:
        record = await engine.register(name)
        return {"adapter": record.describe()}

    result = await _envelope(call_id, "", "register_adapter", body)
    adapter = result.content.get("adapter")
    if adapter:
        result = CallResult(
            result.call_id, adapter["adapter_id"], result.action, result.timestamp, result.content
        )
    return result


async def unregister(engine: Engine, call_id: str, adapter_id: str) -> CallResult:
    async def body() -> dict[str, Any]:
        record = await engine.unregister(adapter_id)
        return {"unregistered": record.adapter_id, "name": record.name}

    return await _envelope(call_id, adapter_id, "unregister_adapter", body)
