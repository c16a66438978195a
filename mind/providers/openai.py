"""OpenAI-compatible Chat Completions (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio, …).

Wire facts this module isolates: the system prompt is the first `system` message; tool
results are `tool` messages carrying `tool_call_id`; tool-call arguments stream as string
fragments keyed by `index` (several calls interleave); usage arrives in a final chunk with
empty `choices` when `stream_options.include_usage` is set; reasoning text comes as
`reasoning_content` (vLLM, DeepSeek) or `reasoning` (Ollama, OpenRouter); tool messages carry
text only, so the images of a step's tool results follow its tool messages in one user message,
each call's labelled `[images from tool call <id>]`; the stream ends
with `data: [DONE]`, and one that ends without it is incomplete whatever `finish_reason` came
before; an error after the 200 is a `data:` object with an `error` member, which may follow the
`finish_reason` chunk and still ends the result as an error.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mind.providers._adapter import StreamingAdapter
from mind.providers._assembly import Assembly
from mind.providers._http import (
    OverflowSign,
    SSEBody,
    chunk_error,
    data_url,
    parse_json,
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

# A request too long for the context window, as each server family says it.
_OVERFLOW = (
    # OpenAI: HTTP 400 with the documented `error.code` "context_length_exceeded" (a recorded
    # body: mckaywrigley/chatbot-ui#102).
    OverflowSign("code", re.compile(r"^context_length_exceeded$")),
    # llama.cpp server: HTTP 400 with `error.type` "exceed_context_size_error"; the message has
    # changed between builds, the type has not (ggml-org/llama.cpp,
    # tools/server/server-common.cpp `format_error_response`, server-context.cpp `send_error`).
    OverflowSign("type", re.compile(r"^exceed_context_size_error$")),
    # vLLM: HTTP 400 with only the generic type "BadRequestError", so the message
    # (vllm-project/vllm, vllm/entrypoints/openai/serving_engine.py); DeepSeek words it alike.
    # Some builds word it "…the model's context length is only N tokens".
    OverflowSign("message", re.compile(r"This model's maximum context length is \d+ tokens")),
    OverflowSign("message", re.compile(r"the model's context length is only \d+ tokens")),
    # LM Studio: an error event in a 200 stream (0.4) or a 400, `{"error": "<message>"}` or
    # `{"error": {"message": …}}`; older builds word it as the tokens to keep not fitting.
    OverflowSign("message", re.compile(r"does not fit in context length")),
    OverflowSign("message", re.compile(r"tokens to keep from the initial prompt is greater")),
    OverflowSign("message", re.compile(r"context the overflows")),
)
# The description of the function a structured answer is forced through ("tool").
ANSWER_TOOL = "Give the answer."
_FINISH = {
    "stop": StopReason.STOP,
    "length": StopReason.LENGTH,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "content_filter": StopReason.SAFETY,
}


class OpenAIProvider(StreamingAdapter):
    name = "openai"
    key_env = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"
    overflow = _OVERFLOW

    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        # Local servers often need no key; sending an empty bearer would be rejected by some.
        if not self._key.value:
            return {}
        return {"Authorization": f"Bearer {self._key.value}"}

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        pending: list[ProviderMessage] = []  # this step's tool results that carry images
        for message in request.messages:
            if message.role != "tool" and pending:
                messages.append(self._result_images(pending))
                pending = []
            messages.append(self._message(message))
            if message.role == "tool" and message.images and self.info.vision:
                pending.append(message)
        if pending:
            messages.append(self._result_images(pending))
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        level = self.thinking_level(request)
        reasoning = level != ThinkingLevel.OFF
        if reasoning:
            # OpenAI has no `xhigh`; the catalog keeps it out, this guards config entries.
            body["reasoning_effort"] = "high" if level == ThinkingLevel.XHIGH else level.value
        # Reasoning models refuse `max_tokens`; the newer name works for them.
        body["max_completion_tokens" if reasoning else "max_tokens"] = self.max_output(request)
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in request.tools
            ]
        held = self.structured(request)
        if held is not None:
            body.update(_response_format(*held))
        return body

    @staticmethod
    def _result_images(results: list[ProviderMessage]) -> dict[str, Any]:
        """One user message with the images of `results`, each call's after its label."""
        parts: list[dict[str, Any]] = []
        for result in results:
            parts.append({"type": "text", "text": f"[images from tool call {result.tool_call_id}]"})
            parts.extend(
                {"type": "image_url", "image_url": {"url": data_url(image)}}
                for image in result.images
            )
        return {"role": "user", "content": parts}

    def _message(self, message: ProviderMessage) -> dict[str, Any]:
        if message.role == "tool":
            text = message.text
            if message.images and not self.info.vision:
                text = blind_text(text, message.images)
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}
        if message.role == "assistant":
            out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                out["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": call.raw_arguments or json.dumps(call.arguments or {}),
                        },
                    }
                    for call in message.tool_calls
                ]
            return out
        if not message.images:
            return {"role": "user", "content": message.text}
        if not self.info.vision:
            return {"role": "user", "content": blind_text(message.text, message.images)}
        if message.parts:
            return {"role": "user", "content": [_content_part(p) for p in message.parts]}
        parts: list[dict[str, Any]] = []
        if message.text:
            parts.append({"type": "text", "text": message.text})
        parts.extend(_content_part(image) for image in message.images)
        return {"role": "user", "content": parts}

    async def read_events(self, sse: SSEBody, assembly: Assembly) -> None:
        thinking = None
        async for event in sse.events():
            data = event.data.strip()
            if not data:
                continue
            if data == "[DONE]":
                assembly.ended = True
                break
            chunk = parse_json(data)
            problem = chunk_error(self._wire, chunk, data)
            if problem is not None:
                assembly.fail(problem)
                return
            if isinstance(chunk.get("usage"), dict):
                assembly.usage = _usage(chunk["usage"])
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    thinking = thinking or assembly.new_thinking()
                    assembly.think(thinking, reasoning)
                if isinstance(delta.get("content"), str):
                    assembly.text(delta["content"])
                if isinstance(delta.get("refusal"), str):
                    assembly.text(delta["refusal"])
                    assembly.stop_reason = StopReason.REFUSAL
                for fragment in delta.get("tool_calls") or []:
                    _tool_fragment(assembly, fragment)
                finish = choice.get("finish_reason")
                if finish and assembly.stop_reason != StopReason.REFUSAL:
                    assembly.stop_reason = _FINISH.get(finish, StopReason.STOP)


def _response_format(output: OutputSchema, how: str) -> dict[str, Any]:
    """The body members that hold the answer to `output`: `response_format` with the schema
    (OpenAI, vLLM, llama-server, LM Studio; Ollama maps it to its native `format`, and
    `json_object` to `format: "json"`: ollama/ollama, openai/openai.go), a bare JSON object
    (OpenAI, vLLM, llama-server, Ollama; LM Studio answers 400 "'response_format.type' must be
    'json_schema'": lmstudio-ai/lmstudio-bug-tracker#189), or a forced function call whose
    arguments become the answer. `strict` is left out: OpenAI's strict mode refuses schemas
    with optional properties, which the stages' schemas have."""
    if how == "json_schema":
        schema = {"name": output.name, "schema": output.schema}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}
    if how == "json_object":
        return {"response_format": {"type": "json_object"}}
    function = {"name": output.name, "description": ANSWER_TOOL, "parameters": output.schema}
    return {
        "tools": [{"type": "function", "function": function}],
        "tool_choice": {"type": "function", "function": {"name": output.name}},
    }


def _tool_fragment(assembly: Assembly, fragment: dict[str, Any]) -> None:
    index = fragment.get("index", 0)
    function = fragment.get("function") or {}
    if index not in assembly.calls:
        assembly.start_call(index, fragment.get("id") or "", function.get("name") or "")
    call = assembly.calls[index]
    if not call.name and function.get("name"):
        call.name = function["name"]
    arguments = function.get("arguments")
    if isinstance(arguments, dict):
        # Some servers send the whole object instead of string fragments.
        arguments = json.dumps(arguments)
    if isinstance(arguments, str):
        assembly.call_fragment(index, arguments)


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details") or {}
    generated = raw.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cached_tokens=int(details.get("cached_tokens") or 0),
        reasoning_tokens=int(generated.get("reasoning_tokens") or 0),
    )


def _content_part(part: str | ImagePart) -> dict[str, Any]:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    return {"type": "image_url", "image_url": {"url": data_url(part)}}
