"""Assembling one normalised result from streamed fragments, whatever the wire."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from mind.providers.base import (
    ErrorKind,
    EventSink,
    ProviderError,
    ProviderResult,
    StopReason,
    StreamEvent,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None) for a JSON object; (None, why) otherwise. Empty means no arguments."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return None, f"the arguments are not valid JSON ({exc})"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, not {type(value).__name__}"
    return value, None


def generated_call_id() -> str:
    """An id for a tool call the model sent without one (older Gemini models)."""
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass
class PendingCall:
    id: str
    name: str
    # The id the model sent; empty when it sent none and `id` was generated.
    provider_id: str = ""
    fragments: list[str] = field(default_factory=list)
    thought_signature: str | None = None

    def finish(self) -> ToolCall:
        raw = "".join(self.fragments)
        arguments, error = parse_arguments(raw)
        return ToolCall(
            id=self.id,
            name=self.name,
            arguments=arguments,
            raw_arguments=raw,
            argument_error=error,
            thought_signature=self.thought_signature,
            provider_id=self.provider_id,
        )


@dataclass
class PendingThinking:
    parts: list[str] = field(default_factory=list)
    signature: str | None = None
    redacted_data: str | None = None

    def finish(self) -> ThinkingBlock:
        return ThinkingBlock("".join(self.parts), self.signature, self.redacted_data)


class Assembly:
    """Collects deltas in arrival order, reports them to the sink, and builds the result."""

    def __init__(self, model: str, on_event: EventSink) -> None:
        self.model = model
        self._on_event = on_event
        self._text: list[str] = []
        self.thinking: list[PendingThinking] = []
        # Keyed by the wire's own index (OpenAI `index`, Anthropic block index, Gemini order).
        self.calls: dict[int, PendingCall] = {}
        self.usage = Usage()
        self.stop_reason: StopReason | None = None
        # Whether the wire's own end marker arrived. A finish reason alone does not make a
        # response complete: an error or a cut-off can still follow it.
        self.ended = False
        self.error: ProviderError | None = None
        # Whether anything reached the sink: then the call can no longer be retried.
        self.emitted = False

    def _emit(self, event: StreamEvent) -> None:
        self.emitted = True
        self._on_event(event)

    def text(self, fragment: str) -> None:
        if fragment:
            self._text.append(fragment)
            self._emit(TextDelta(fragment))

    def new_thinking(self) -> PendingThinking:
        block = PendingThinking()
        self.thinking.append(block)
        return block

    def think(self, block: PendingThinking, fragment: str) -> None:
        if fragment:
            block.parts.append(fragment)
            self._emit(ThinkingDelta(fragment))

    def start_call(self, index: int, call_id: str, name: str) -> PendingCall:
        """A new call; `call_id` is the model's own id, empty when it sent none."""
        call = PendingCall(call_id or generated_call_id(), name, provider_id=call_id)
        self.calls[index] = call
        self._emit(ToolCallDelta(len(self.calls) - 1, call.id, name))
        return call

    def call_fragment(self, index: int, fragment: str) -> None:
        call = self.calls.get(index)
        if call is None or not fragment:
            return
        call.fragments.append(fragment)
        position = list(self.calls).index(index)
        self._emit(ToolCallDelta(position, call.id, call.name, fragment))

    def fail(self, error: ProviderError) -> None:
        if self.error is None:
            self.error = error

    def result(self, incomplete: str) -> ProviderResult:
        """The assembled result; `incomplete` describes a stream that ended before its end
        marker or without a finish reason."""
        calls = [call.finish() for call in self.calls.values()]
        if self.error is not None:
            stop = StopReason.ERROR
        elif self.stop_reason is None or not self.ended:
            self.error = ProviderError(ErrorKind.STREAM, incomplete)
            stop = StopReason.ERROR
        elif self.stop_reason == StopReason.STOP and calls:
            stop = StopReason.TOOL_USE
        else:
            stop = self.stop_reason
        return ProviderResult(
            text="".join(self._text),
            thinking=[block.finish() for block in self.thinking],
            tool_calls=calls,
            usage=self.usage,
            stop_reason=stop,
            error=self.error,
            model=self.model,
        )
