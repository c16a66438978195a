"""A request too long for the context window, and usage that measures the window, on every wire.

Each error body is served byte for byte (`fixtures/context_overflow/README.md` names its
source) ahead of a good response, so a retry would show as a second request.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from provider_wire import JSON, Reply, WireServer, data_file, fixture_file

from mind.providers._adapter import StreamingAdapter
from mind.providers.base import (
    ErrorKind,
    ProviderMessage,
    ProviderRequest,
    StopReason,
    Usage,
)

ProviderFor = Callable[[str], StreamingAdapter]
REQUEST = ProviderRequest("Be brief.", [ProviderMessage("user", "Hi")])
# A good response per wire, played after the error: it must never be asked for.
GOOD = {
    "openai": "openai/reasoning_length.sse",
    "anthropic": "anthropic/basic_response.txt",
    "gemini": "gemini/max_tokens.sse",
}
OVERFLOWS = [
    # OpenAI Chat Completions, `code: context_length_exceeded` (mckaywrigley/chatbot-ui#102).
    ("openai", "openai.json", "This model's maximum context length is 4097 tokens."),
    # vLLM, message only (vllm/entrypoints/openai/serving_engine.py).
    ("openai", "vllm.json", "This model's maximum context length is 4096 tokens."),
    # vLLM, another wording of the same refusal (early 2026 builds).
    ("openai", "vllm_context_only.json", "the model's context length is only 4096 tokens"),
    # LM Studio, `{"error": "<message>"}` (lmstudio-bug-tracker #169).
    ("openai", "lmstudio.json", "context length of only 4096 tokens"),
    # llama.cpp server, `type: exceed_context_size_error` (tools/server/server-common.cpp).
    ("openai", "llamacpp.json", "the request exceeds the available context size"),
    # Anthropic, the prompt alone (anthropics/claude-code#12186).
    ("anthropic", "anthropic_prompt_too_long.json", "prompt is too long: 208310 tokens"),
    # Anthropic, prompt plus `max_tokens` (continuedev/continue#8454).
    ("anthropic", "anthropic_input_and_max_tokens.json", "143653 + 64000 > 200000"),
    # Gemini, INVALID_ARGUMENT with the token counts (google-gemini/gemini-cli#4231).
    ("gemini", "gemini.json", "The input token count (3475108) exceeds the maximum"),
]
ORDINARY_400S = [
    # vLLM rejecting a negative `max_tokens` (vllm-project/vllm#4667).
    ("openai", "vllm_bad_max_tokens.json", "max_tokens must be at least 1"),
    # Anthropic rejecting a `max_tokens` above the model's output limit (claude-code#24451).
    ("anthropic", "anthropic_max_tokens_too_large.json", "max_tokens: 128001 > 64000"),
]


@pytest.mark.parametrize(("kind", "name", "said"), OVERFLOWS)
async def test_a_request_too_long_for_the_window_is_a_context_overflow_never_retried(
    wire: WireServer, provider_for: ProviderFor, kind: str, name: str, said: str
) -> None:
    wire.play(
        Reply(400, fixture_file(f"context_overflow/{name}"), dict(JSON)),
        Reply(body=data_file(GOOD[kind])),
    )
    result = await provider_for(kind).complete(REQUEST, lambda e: None)

    assert result.stop_reason == StopReason.ERROR
    assert result.error is not None
    assert result.error.kind == ErrorKind.CONTEXT_OVERFLOW
    assert result.error.status == 400
    assert said in result.error.message
    assert "context window" in result.error.message
    assert len(wire.requests) == 1


@pytest.mark.parametrize(("kind", "name", "said"), ORDINARY_400S)
async def test_any_other_400_stays_a_rejected_request(
    wire: WireServer, provider_for: ProviderFor, kind: str, name: str, said: str
) -> None:
    wire.play(Reply(400, fixture_file(f"context_overflow/{name}"), dict(JSON)))
    result = await provider_for(kind).complete(REQUEST, lambda e: None)

    assert result.error is not None
    assert result.error.kind == ErrorKind.REQUEST
    assert said in result.error.message
    assert len(wire.requests) == 1


async def test_anthropic_window_filled_while_answering_is_a_length_stop(
    wire: WireServer, provider_for: ProviderFor
) -> None:
    wire.play(Reply(body=fixture_file("context_overflow/anthropic_window_exceeded.txt")))
    result = await provider_for("anthropic").complete(REQUEST, lambda e: None)

    assert result.error is None
    assert result.stop_reason == StopReason.LENGTH
    assert result.text == "Hello there!"
    assert result.usage == Usage(input_tokens=3 + 199_990, output_tokens=7, cached_tokens=199_990)


@pytest.mark.parametrize(
    ("kind", "name", "usage"),
    [
        # `prompt_tokens` 31 already counts `prompt_tokens_details.cached_tokens` 16.
        ("openai", "openai/reasoning_length.sse", Usage(31, 12, 16)),
        # `promptTokenCount` 34 already counts `cachedContentTokenCount` 8; thoughts are output.
        ("gemini", "gemini/thoughts_unterminated.sse", Usage(34, 5 + 20, 8, 20)),
        # `input_tokens` 420 leaves out cache writes 100 and cache reads 2000.
        ("anthropic", "anthropic/redacted_parallel_tools.txt", Usage(420 + 100 + 2000, 88, 2000)),
        # A `message_delta` repeating `input_tokens` alone keeps the cache counts of
        # `message_start`.
        ("anthropic", "anthropic/usage_in_message_delta.txt", Usage(420 + 100 + 2000, 88, 2000)),
    ],
)
async def test_input_tokens_are_the_whole_prompt_cached_part_included(
    wire: WireServer, provider_for: ProviderFor, kind: str, name: str, usage: Usage
) -> None:
    wire.play(Reply(body=data_file(name)))
    result = await provider_for(kind).complete(REQUEST, lambda e: None)

    assert result.error is None
    assert result.usage == usage
