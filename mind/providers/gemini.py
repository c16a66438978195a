"""Gemini generateContent, streamed with `streamGenerateContent?alt=sse`.

Wire facts this module isolates: the key goes in `x-goog-api-key`; the system prompt is
`systemInstruction`; the assistant role is `model`; every chunk repeats `usageMetadata` (the
last one counts); function calls arrive whole (arguments as objects), older models send them
without ids; a call's id goes back in both `functionCall.id` and `functionResponse.id` (the
model's own id, or the Mind's when the model sent none: both fields are optional and a
matching pair keeps parallel calls to one function apart); thought parts carry
`thought: true`; a `thoughtSignature` must go back on the part it came with; tool results are
`functionResponse` parts in a user turn, followed there by the `inlineData` parts of the
images they carry. Real streams separate events with CRLF CRLF, may
end on an unterminated event (see `_http._Terminated`) and may report an error after the 200
as a raw JSON object without `data:`, even after chunks that already carried
`finishReason: STOP`.

The wire has no end marker, so a response counts as complete when the body ended cleanly
(httpx checks the chunked framing: a dropped connection is a transport error), the last chunk
with a candidate carried a finish reason (content after a finish reason means it was not the
last word), and nothing but events came after the last event (anything else, an error object
or text from a proxy, ends the result as an error).
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
    chunk_error,
    parse_json,
    stream_error,
)
from mind.providers.base import (
    ErrorKind,
    ImagePart,
    OutputSchema,
    ProviderError,
    ProviderMessage,
    ProviderRequest,
    StopReason,
    ThinkingLevel,
    Usage,
)
from mind.providers.vision import blind_text

# Gemini 2.x takes a token budget; later models take a named level.
BUDGETS = {
    ThinkingLevel.OFF: 0,
    ThinkingLevel.MINIMAL: 512,
    ThinkingLevel.LOW: 1024,
    ThinkingLevel.MEDIUM: 8192,
    ThinkingLevel.HIGH: 24576,
    ThinkingLevel.XHIGH: 32768,
}
# A request too long for the context window: HTTP 400 with the generic INVALID_ARGUMENT
# status, so the message, "The input token count (1200293) exceeds the maximum number of tokens
# allowed (1048576)." (recorded: google-gemini/gemini-cli#4231, #6678), matched with or
# without the count.
_OVERFLOW = (
    OverflowSign(
        "message",
        re.compile(r"input token count (?:\(\d+\) )?exceeds the maximum number of tokens allowed"),
    ),
)
_FINISH = {
    "STOP": StopReason.STOP,
    "MAX_TOKENS": StopReason.LENGTH,
    "SAFETY": StopReason.SAFETY,
    "RECITATION": StopReason.SAFETY,
    "BLOCKLIST": StopReason.SAFETY,
    "PROHIBITED_CONTENT": StopReason.SAFETY,
    "SPII": StopReason.SAFETY,
    "IMAGE_SAFETY": StopReason.SAFETY,
}


class GeminiProvider(StreamingAdapter):
    name = "gemini"
    key_env = "GEMINI_API_KEY"
    default_base_url = "https://generativelanguage.googleapis.com"
    overflow = _OVERFLOW

    def url(self) -> str:
        base = self.base_url
        if not base.rsplit("/", 1)[-1].startswith("v1"):
            base += "/v1beta"
        return f"{base}/models/{self.model}:streamGenerateContent?alt=sse"

    def headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._key.value}

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        config: dict[str, Any] = {"maxOutputTokens": self.max_output(request)}
        thinking = self._thinking_config(self.thinking_level(request), request.thinking_budget)
        if thinking:
            config["thinkingConfig"] = thinking
        body: dict[str, Any] = {
            "contents": _contents(request.messages, self.info.vision),
            "generationConfig": config,
        }
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {
                            "name": tool.name,
                            "description": tool.description,
                            "parametersJsonSchema": tool.parameters,
                        }
                        for tool in request.tools
                    ]
                }
            ]
        held = self.structured(request)
        if held is not None:
            config["responseMimeType"] = "application/json"
            if held[1] != "json_object":
                # JSON Schema as it is; the older `responseSchema` takes only an OpenAPI subset
                # (no `additionalProperties`, enums only on strings), which would need the
                # stages' schemas converted.
                config["responseJsonSchema"] = held[0].schema
        return body

    def structured(self, request: ProviderRequest) -> tuple[OutputSchema, str] | None:
        """The schema goes in `generationConfig` on this wire, so "tool" means "json_schema"
        here."""
        held = super().structured(request)
        if held is None or held[1] != "tool":
            return held
        return held[0], "json_schema"

    def _thinking_config(self, level: ThinkingLevel, budget: int | None) -> dict[str, Any] | None:
        if self.info.thinking_levels == (ThinkingLevel.OFF,):
            return None
        if level == ThinkingLevel.OFF:
            return {"thinkingBudget": 0}
        if self.model.startswith("gemini-2"):
            return {"thinkingBudget": budget or BUDGETS[level], "includeThoughts": True}
        named = "high" if level == ThinkingLevel.XHIGH else level.value
        return {"thinkingLevel": named, "includeThoughts": True}

    async def read_events(self, sse: SSEBody, assembly: Assembly) -> None:
        state = _ChunkReader(assembly)
        async for event in sse.events():
            if not event.data.strip():
                continue
            chunk = parse_json(event.data)
            if isinstance(chunk, list) and chunk:
                chunk = chunk[0]
            problem = chunk_error(self._wire, chunk, event.data)
            if problem is not None:
                assembly.fail(problem)
                return
            state.feed(chunk)
        trailing = sse.trailing_text()
        if trailing is not None:
            assembly.fail(
                stream_error(
                    self._wire,
                    parse_json(trailing),
                    f"unexpected data after the last chunk: {trailing[:200]!r}",
                )
            )
            return
        assembly.ended = True


class _ChunkReader:
    """Feeds Gemini chunks into an Assembly, keeping thought blocks together."""

    def __init__(self, assembly: Assembly) -> None:
        self.assembly = assembly
        self.thinking: PendingThinking | None = None

    def feed(self, chunk: dict[str, Any]) -> None:
        assembly = self.assembly
        if isinstance(chunk.get("usageMetadata"), dict):
            assembly.usage = _usage(chunk["usageMetadata"])
        blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            assembly.stop_reason = StopReason.SAFETY
        candidates = chunk.get("candidates") or []
        if not candidates:
            return
        candidate = candidates[0]
        for part in (candidate.get("content") or {}).get("parts") or []:
            self._part(part)
        finish = candidate.get("finishReason")
        if not finish or finish == "FINISH_REASON_UNSPECIFIED":
            # More of the answer after a finish reason: that reason was not the last word.
            assembly.stop_reason = None
        elif finish in _FINISH:
            assembly.stop_reason = _FINISH[finish]
        else:
            assembly.fail(ProviderError(ErrorKind.STREAM, f"gemini: finished with {finish}"))

    def _part(self, part: dict[str, Any]) -> None:
        assembly = self.assembly
        signature = part.get("thoughtSignature")
        if "functionCall" in part:
            self.thinking = None
            call = part["functionCall"] or {}
            index = len(assembly.calls)
            pending = assembly.start_call(index, call.get("id") or "", call.get("name") or "")
            pending.thought_signature = signature
            args = call.get("args")
            assembly.call_fragment(index, json.dumps(args if args is not None else {}))
            return
        text = part.get("text")
        if part.get("thought"):
            if self.thinking is None or (signature and self.thinking.signature):
                self.thinking = assembly.new_thinking()
            assembly.think(self.thinking, text or "")
            if signature:
                self.thinking.signature = signature
            return
        self.thinking = None
        if isinstance(text, str):
            assembly.text(text)
        if signature:
            # A signature on an answer part: kept as an empty thinking block, sent back on the
            # answer's text part.
            assembly.new_thinking().signature = signature


def _usage(raw: dict[str, Any]) -> Usage:
    thoughts = int(raw.get("thoughtsTokenCount") or 0)
    return Usage(
        input_tokens=int(raw.get("promptTokenCount") or 0),
        output_tokens=int(raw.get("candidatesTokenCount") or 0) + thoughts,
        cached_tokens=int(raw.get("cachedContentTokenCount") or 0),
        reasoning_tokens=thoughts,
    )


def _user_parts(message: ProviderMessage, vision: bool) -> list[dict[str, Any]]:
    if vision and message.parts:
        return [
            {"text": part} if isinstance(part, str) else _inline(part) for part in message.parts
        ]
    text = message.text if vision else blind_text(message.text, message.images)
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    if vision:
        parts.extend(_image_parts(message))
    return parts


def _model_parts(message: ProviderMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    answer_signature = None
    for block in message.thinking:
        if block.text:
            part: dict[str, Any] = {"text": block.text, "thought": True}
            if block.signature:
                part["thoughtSignature"] = block.signature
            parts.append(part)
        elif block.signature:
            answer_signature = block.signature
    if message.text or answer_signature:
        part = {"text": message.text}
        if answer_signature:
            part["thoughtSignature"] = answer_signature
        parts.append(part)
    for call in message.tool_calls:
        part = {"functionCall": {"id": call.id, "name": call.name, "args": call.arguments or {}}}
        if call.thought_signature:
            part["thoughtSignature"] = call.thought_signature
        parts.append(part)
    return parts


def _function_response(message: ProviderMessage, vision: bool) -> dict[str, Any]:
    key = "error" if message.is_error else "output"
    text = message.text if vision else blind_text(message.text, message.images)
    return {
        "functionResponse": {
            "id": message.tool_call_id,
            "name": message.tool_name,
            "response": {key: text},
        }
    }


def _inline(image: ImagePart) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.mime_type, "data": image.data_base64}}


def _image_parts(message: ProviderMessage) -> list[dict[str, Any]]:
    return [_inline(image) for image in message.images]


def _contents(messages: list[ProviderMessage], vision: bool) -> list[dict[str, Any]]:
    """Wire contents; consecutive tool results share one user turn: their `functionResponse`
    parts, then the `inlineData` parts of the images they carry (a vision model)."""
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            results.append(_function_response(message, vision))
            if vision:
                images.extend(_image_parts(message))
            continue
        if results:
            out.append({"role": "user", "parts": results + images})
            results, images = [], []
        if message.role == "assistant":
            out.append({"role": "model", "parts": _model_parts(message)})
        else:
            out.append({"role": "user", "parts": _user_parts(message, vision)})
    if results:
        out.append({"role": "user", "parts": results + images})
    return out
