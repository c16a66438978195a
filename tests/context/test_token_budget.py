"""The context budget and the per-conversation token estimate."""

from __future__ import annotations

from mind.context.budget import IMAGE_TOKENS, Budget, Size, TokenEstimator, request_size
from mind.providers.base import (
    ImagePart,
    ProviderMessage,
    ProviderRequest,
    ThinkingBlock,
    ToolCall,
    ToolDefinition,
    Usage,
)
from mind.providers.catalog import ModelInfo
from tobe.config import ContextSettings

OFF = ()


def test_the_prompt_may_fill_the_window_minus_the_requested_output_and_the_reserve() -> None:
    info = ModelInfo("m", 200_000, 64_000, vision=True, thinking_levels=OFF)
    budget = Budget.of(info, ContextSettings(reserve_tokens=4096, max_output_tokens=16_384))
    assert (budget.output_tokens, budget.reserve_tokens) == (16_384, 4096)
    assert budget.prompt_limit == 200_000 - 16_384 - 4096


def test_a_small_window_keeps_at_most_an_eighth_of_itself_as_reserve() -> None:
    info = ModelInfo("m", context_window=4000, max_output=256, vision=False, thinking_levels=OFF)
    budget = Budget.of(info, ContextSettings())
    assert (budget.output_tokens, budget.reserve_tokens, budget.prompt_limit) == (256, 500, 3244)


def test_a_small_window_gives_the_reply_at_most_a_quarter_of_itself() -> None:
    """A 4k-window model whose catalog entry allows 4k of output still keeps 3k for the
    conversation."""
    info = ModelInfo("m", context_window=4096, max_output=4096, vision=False, thinking_levels=OFF)
    budget = Budget.of(info, ContextSettings())
    assert (budget.output_tokens, budget.reserve_tokens, budget.prompt_limit) == (1024, 512, 2560)


def test_everything_a_request_carries_counts_toward_its_size() -> None:
    bare = ProviderRequest("", [ProviderMessage("user", "hi")])
    full = ProviderRequest(
        "system prompt",
        [
            ProviderMessage(
                "assistant",
                "hi",
                thinking=[ThinkingBlock("thought", signature="sig")],
                tool_calls=[ToolCall("c", "lookup", {"q": "x"}, '{"q":"x"}')],
            ),
            ProviderMessage("user", "hi", images=[ImagePart("image/png", "AAAA")]),
        ],
        tools=[ToolDefinition("lookup", "find things", {"type": "object"})],
    )
    small, large = request_size(bare), request_size(full)
    assert large.chars > small.chars + len("system prompt") + len("thought") + len('{"q":"x"}')
    assert (small.images, large.images) == (0, 1)


def test_the_estimate_follows_the_usage_each_conversation_reports() -> None:
    estimator = TokenEstimator(chars_per_token=3.0)
    assert estimator.estimate("p_a", Size(3000)) == 1000  # before any report: the default
    estimator.observe("p_a", Size(3000), Usage(input_tokens=500))
    # The reported tokens for what was seen, the new characters at the calibrated ratio.
    assert estimator.ratio("p_a") == 4.5  # halfway from 3.0 toward the observed 6.0
    assert estimator.estimate("p_a", Size(3000)) == 500
    assert estimator.estimate("p_a", Size(3900)) == 500 + 200
    assert estimator.estimate("p_a", Size(3000, images=1)) == 500 + IMAGE_TOKENS
    assert estimator.estimate("p_b", Size(3000)) == 1000, "calibration is per conversation"


def test_a_usage_report_that_cannot_be_right_does_not_calibrate() -> None:
    estimator = TokenEstimator(chars_per_token=3.0)
    estimator.observe("p_a", Size(3000), Usage(input_tokens=0))
    estimator.observe("p_a", Size(30), Usage(input_tokens=10_000))  # 0.003 chars per token
    assert estimator.estimate("p_a", Size(3000)) == 1000


def test_an_overflow_lowers_the_ratio_so_the_refused_request_would_have_been_over() -> None:
    estimator = TokenEstimator(chars_per_token=4.0)
    estimator.observe_overflow("p_a", Size(10_000), at_least=4000)
    assert estimator.estimate("p_a", Size(10_000)) >= 4000
    assert estimator.ratio("p_a") == 2.5
