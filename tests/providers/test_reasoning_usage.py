"""Reasoning tokens, where each wire reports them, over real HTTP.

`Usage.reasoning_tokens` is the part of `output_tokens` the model spent reasoning: OpenAI's
`completion_tokens_details.reasoning_tokens` (already counted in `completion_tokens`), Gemini's
`thoughtsTokenCount` (added to `candidatesTokenCount`); Anthropic's wire reports none.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from provider_wire import Reply, WireServer, data_file

from mind.providers._adapter import StreamingAdapter
from mind.providers.base import ProviderMessage, ProviderRequest, Usage

ProviderFor = Callable[[str], StreamingAdapter]

REQUEST = ProviderRequest(system="Be brief.", messages=[ProviderMessage("user", "hi")])


@pytest.mark.parametrize(
    ("kind", "name", "usage"),
    [
        ("openai", "openai/reasoning_tokens_usage.sse", Usage(57, 198, 0, 192)),
        # A server that sends no `completion_tokens_details` reports no reasoning.
        ("openai", "openai/reasoning_length.sse", Usage(31, 12, 16, 0)),
        ("gemini", "gemini/thoughts_unterminated.sse", Usage(34, 5 + 20, 8, 20)),
        ("anthropic", "anthropic/redacted_parallel_tools.txt", Usage(2520, 88, 2000, 0)),
    ],
)
async def test_reasoning_tokens_are_the_part_of_the_output_the_wire_says_was_reasoning(
    wire: WireServer, provider_for: ProviderFor, kind: str, name: str, usage: Usage
) -> None:
    wire.play(Reply(body=data_file(name)))
    result = await provider_for(kind).complete(REQUEST, lambda e: None)

    assert result.error is None
    assert result.usage == usage
