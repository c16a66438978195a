"""The conformance tools `tobe hand check` drives (hand.proto, "Conformance (tobe hand check)").

Every Hand, in any language, declares the same three tools with the same schemas and effects,
so the check can script offers, progress, cancels and approval bindings without knowing the
Hand's own tools. `add_conformance_tools(hand)` adds them to an SDK Hand.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic

from hand._hand import Hand
from hand._progress import report_progress
from hand._tools import Effect, ToolFunction

TEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}
SECONDS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"seconds": {"type": "number"}},
    "required": ["seconds"],
}


class _Text(pydantic.BaseModel):
    # The schema allows other properties (the approval scenarios bind arguments with more).
    model_config = pydantic.ConfigDict(extra="ignore")
    text: str


class _Seconds(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore")
    seconds: float


async def _echo(text: str) -> str:
    return text


async def _wait(seconds: float) -> str:
    report_progress("waiting", 0.0)
    await asyncio.sleep(seconds)
    return "done"


def add_conformance_tools(hand: Hand) -> None:
    """Declare `conformance_echo`, `conformance_wait` and `conformance_write` on `hand`."""
    for name, description, effect, function, arguments, schema in (
        ("conformance_echo", "Return the text.", Effect.READ_ONLY, _echo, _Text, TEXT_SCHEMA),
        (
            "conformance_wait",
            "Report progress, then wait the given seconds.",
            Effect.READ_ONLY,
            _wait,
            _Seconds,
            SECONDS_SCHEMA,
        ),
        (
            "conformance_write",
            "Return the text (declared effectful, to carry approval bindings).",
            Effect.EXTERNAL_SIDE_EFFECT,
            _echo,
            _Text,
            TEXT_SCHEMA,
        ),
    ):
        hand.add_tool(
            ToolFunction(
                name=name,
                description=description,
                effect=effect,
                background=False,
                function=function,
                arguments=arguments,
                schema=schema,
            )
        )
