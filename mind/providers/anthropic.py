"""Anthropic Messages.

Wire facts this module isolates: `x-api-key` and `anthropic-version` headers; the system
prompt is a top-level `system` field; `max_tokens` is required and must exceed the thinking
budget; content arrives as indexed blocks (`text`, `thinking` + `signature_delta`,
`redacted_thinking`, `tool_use` + `input_json_delta` fragments); usage is split between
`message_start` (input, cache) and `message_delta` (output); `ping` events and empty deltas
carry nothing; an `error` event may end a 200 stream, even after `message_delta` carried a
stop reason; a stream that ends without `message_stop` is incomplete. On the way back,
thinking blocks are returned with their signature byte for byte, redacted blocks unchanged,
and tool results are `tool_result` blocks inside one user message (one with images has
text and `image` blocks as its `content`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mind.providers._adapter import StreamingAdapter
from mind.providers._assembly import Assembly, PendingThinking
from mind.providers._http import (
    OverflowSign,
    SSEBody,
    parse_json,
    stream_error,
)
from mind.providers.base import (
    ImagePart,
    OutputSchema,
    ProviderMessage,
    ProviderRequest,
    StopReason,
    ThinkingLevel,
    Usage,
)
from mind.providers.vision import blind_text

API_VERSION = "2023-06-01"
# The description of the tool a structured answer is forced through.
ANSWER_TOOL = "Give the answer."
# Thinking budget per level; the API's minimum budget is 1024 tokens.
BUDGETS = {
    ThinkingLevel.MINIMAL: 1024,
    ThinkingLevel.LOW: 2048,
    ThinkingLevel.MEDIUM: 8192,
    ThinkingLevel.HIGH: 16384,
    ThinkingLevel.XHIGH: 32000,
}
# Room left for the answer itself when a thinking budget is set.
_ANSWER_ROOM = 4096
# A request too long for the context window: HTTP 400 with the generic
# `invalid_request_error` type, so the message, in its two forms: the prompt alone is too long
# (recorded: anthropics/claude-code#12186), or the prompt plus `max_tokens` is (recorded:
# continuedev/continue#8454).
_OVERFLOW = (
    OverflowSign("message", re.compile(r"prompt is too long: \d+ tokens > \d+ maximum")),
    OverflowSign(
        "message",
        re.compile(r"input length and `max_tokens` exceed context limit: \d+ \+ \d+ > \d+"),
    ),
)
_STOP = {
    "end_turn": StopReason.STOP,
    "stop_sequence": StopReason.STOP,
    "pause_turn": StopReason.STOP,
    "max_tokens": StopReason.LENGTH,
    # The window filled while the answer was being written (the request was accepted, with
    # less room left than `max_tokens`): the answer is cut short exactly as by `max_tokens`
    # and nothing failed, so it is LENGTH, not an error; CONTEXT_OVERFLOW is for a request
    # refused before any output.
    "model_context_window_exceeded": StopReason.LENGTH,
    "tool_use": StopReason.TOOL_USE,
    "refusal": StopReason.REFUSAL,
}


class AnthropicProvider(StreamingAdapter):
    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"
    overflow = _OVERFLOW

    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self._key.value, "anthropic-version": API_VERSION}

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        max_tokens = self.max_output(request)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": _messages(request.messages, self.info.vision),
            "stream": True,
        }
        if request.system:
            body["system"] = request.system
        level = self.thinking_level(request)
        if level != ThinkingLevel.OFF:
            wanted = request.thinking_budget or BUDGETS[level]
            budget = min(max(1024, wanted), max(1024, self.info.max_output - _ANSWER_ROOM))
            max_tokens = min(max(max_tokens, budget + _ANSWER_ROOM), self.info.max_output)
            body["thinking"] = {"type": "enabled", "budget_tokens": min(budget, max_tokens - 1)}
        body["max_tokens"] = max_tokens
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        held = self.structured(request)
        if held is not None:
            output = held[0]
            body["tools"] = [
                {"name": output.name, "description": ANSWER_TOOL, "input_schema": output.schema}
            ]
            body["tool_choice"] = {"type": "tool", "name": output.name}
        return body

    def structured(self, request: ProviderRequest) -> tuple[OutputSchema, str] | None:
        """Forced tool use is this wire's one way to hold an answer to a schema (the call's
        input becomes the answer's text), whatever other value the model's entry names. The
        API refuses a forced tool with thinking on, so thinking off only."""
        held = super().structured(request)
        if held is None or self.thinking_level(request) != ThinkingLevel.OFF:
            return None
        return held[0], "tool"

    async def read_events(self, sse: SSEBody, assembly: Assembly) -> None:
        blocks: dict[int, PendingThinking | None] = {}
        counts: dict[str, int] = {}
        async for event in sse.events():
            data = parse_json(event.data) if event.data.strip() else None
            if not isinstance(data, dict):
                continue
            kind = data.get("type") or event.event
            if kind == "message_start":
                message = data.get("message") or {}
                assembly.usage = _usage(counts, message.get("usage") or {})
            elif kind == "content_block_start":
                self._start_block(assembly, blocks, data)
            elif kind == "content_block_delta":
                _delta(assembly, blocks, data.get("index", 0), data.get("delta") or {})
            elif kind == "message_delta":
                reason = (data.get("delta") or {}).get("stop_reason")
                if reason:
                    assembly.stop_reason = _STOP.get(reason, StopReason.STOP)
                assembly.usage = _usage(counts, data.get("usage") or {})
            elif kind == "message_stop":
                if assembly.stop_reason is None:
                    assembly.stop_reason = StopReason.STOP
                assembly.ended = True
                return
            elif kind == "error":
                assembly.fail(stream_error(self._wire, data, "error event"))
                return

    def _start_block(
        self, assembly: Assembly, blocks: dict[int, PendingThinking | None], data: dict[str, Any]
    ) -> None:
        index = data.get("index", 0)
        block = data.get("content_block") or {}
        kind = block.get("type")
        blocks[index] = None
        if kind == "text":
            assembly.text(block.get("text") or "")
        elif kind == "thinking":
            pending = assembly.new_thinking()
            blocks[index] = pending
            assembly.think(pending, block.get("thinking") or "")
            pending.signature = block.get("signature") or None
        elif kind == "redacted_thinking":
            pending = assembly.new_thinking()
            pending.redacted_data = block.get("data") or ""
        elif kind == "tool_use":
            assembly.start_call(index, block.get("id") or "", block.get("name") or "")
            initial = block.get("input")
            if initial:
                # A complete input in the start block (no deltas follow) is kept as JSON text.
                assembly.call_fragment(index, json.dumps(initial))
        # Other block kinds (server tools, citations) belong to features ToBe does not request.


def _delta(
    assembly: Assembly,
    blocks: dict[int, PendingThinking | None],
    index: int,
    delta: dict[str, Any],
) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        assembly.text(delta.get("text") or "")
    elif kind == "thinking_delta":
        pending = blocks.get(index)
        if pending is not None:
            assembly.think(pending, delta.get("thinking") or "")
    elif kind == "signature_delta":
        pending = blocks.get(index)
        if pending is not None:
            pending.signature = (pending.signature or "") + (delta.get("signature") or "")
    elif kind == "input_json_delta":
        assembly.call_fragment(index, delta.get("partial_json") or "")


def _usage(counts: dict[str, int], raw: dict[str, Any]) -> Usage:
    """Folds one event's usage into `counts` and reads the total so far.

    `message_start` carries the input and cache counts, `message_delta` the output count and
    sometimes the input counts again (cumulative), each of them possibly null or left out:
    a count keeps its last value until an event carries a new one. Input counts all prompt
    tokens (fresh, cache writes and cache reads), like OpenAI's `prompt_tokens`.
    """
    counts.update((key, value) for key, value in raw.items() if type(value) is int)
    cached = counts.get("cache_read_input_tokens", 0)
    return Usage(
        input_tokens=counts.get("input_tokens", 0)
        + counts.get("cache_creation_input_tokens", 0)
        + cached,
        output_tokens=counts.get("output_tokens", 0),
        cached_tokens=cached,
    )


def _image_block(image: ImagePart) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.mime_type, "data": image.data_base64},
    }


def _user_content(message: ProviderMessage, vision: bool) -> list[dict[str, Any]]:
    if vision and message.parts:
        return [
            {"type": "text", "text": part} if isinstance(part, str) else _image_block(part)
            for part in message.parts
        ]
    content: list[dict[str, Any]] = []
    text = message.text if vision else blind_text(message.text, message.images)
    if text:
        content.append({"type": "text", "text": text})
    if vision:
        content.extend(_image_block(image) for image in message.images)
    return content


def _tool_result(message: ProviderMessage, vision: bool) -> dict[str, Any]:
    """A `tool_result` block: its text, or text and image blocks when it carries images (a
    blind model gets the placeholder text instead)."""
    content: str | list[dict[str, Any]] = message.text
    if message.images:
        content = (
            _user_content(message, vision) if vision else blind_text(message.text, message.images)
        )
    result: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": content,
    }
    if message.is_error:
        result["is_error"] = True
    return result


def _assistant_content(message: ProviderMessage) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in message.thinking:
        if block.redacted_data is not None:
            content.append({"type": "redacted_thinking", "data": block.redacted_data})
        elif block.signature:
            # The API verifies the signature against the text: both go back unchanged.
            content.append(
                {"type": "thinking", "thinking": block.text, "signature": block.signature}
            )
    if message.text:
        content.append({"type": "text", "text": message.text})
    content.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments or {}}
        for call in message.tool_calls
    )
    return content


def _messages(messages: list[ProviderMessage], vision: bool) -> list[dict[str, Any]]:
    """Wire messages; consecutive tool results share one user message, as the API requires."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            result = _tool_result(message, vision)
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "user"
                and previous["content"]
                and all(part.get("type") == "tool_result" for part in previous["content"])
            ):
                previous["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
        elif message.role == "assistant":
            out.append({"role": "assistant", "content": _assistant_content(message)})
        else:
            out.append({"role": "user", "content": _user_content(message, vision)})
    return out
