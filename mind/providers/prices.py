"""What a model's tokens cost: list prices of the built-in models and `[[provider.models]]`
prices, in USD per million tokens, for the estimated cost `tobe usage` prints.

A model with no known price costs nothing here: reports show its tokens only and mark it.
Prices are the providers' published list prices for prompts up to 200k tokens (Gemini's and
Anthropic's long-context tiers and Anthropic's cache-write surcharge are not modelled), so the
cost is an estimate, never a bill.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tobe.config import ModelEntry, Settings

CURRENCY = "USD"
PER_TOKENS = 1_000_000


@dataclass(frozen=True)
class Price:
    """USD per million tokens: fresh input, output (reasoning included), cached input."""

    input: float
    output: float
    cached_input: float

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int) -> float:
        """The cost of one group of tokens; `input_tokens` includes the cached ones."""
        fresh = max(input_tokens - cached_tokens, 0)
        return (
            fresh * self.input + cached_tokens * self.cached_input + output_tokens * self.output
        ) / PER_TOKENS


BUILTIN_PRICES: dict[str, dict[str, Price]] = {
    "openai": {
        "gpt-4o": Price(2.50, 10.00, 1.25),
        "gpt-4o-mini": Price(0.15, 0.60, 0.075),
        "gpt-4.1": Price(2.00, 8.00, 0.50),
        "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
        "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
        "o3": Price(2.00, 8.00, 0.50),
        "o3-mini": Price(1.10, 4.40, 0.55),
        "o4-mini": Price(1.10, 4.40, 0.275),
        "gpt-5": Price(1.25, 10.00, 0.125),
        "gpt-5-mini": Price(0.25, 2.00, 0.025),
        "gpt-5-nano": Price(0.05, 0.40, 0.005),
    },
    "anthropic": {
        "claude-opus-4-1": Price(15.00, 75.00, 1.50),
        "claude-opus-4": Price(15.00, 75.00, 1.50),
        "claude-sonnet-4-5": Price(3.00, 15.00, 0.30),
        "claude-sonnet-4": Price(3.00, 15.00, 0.30),
        "claude-haiku-4-5": Price(1.00, 5.00, 0.10),
        "claude-3-7-sonnet": Price(3.00, 15.00, 0.30),
        "claude-3-5-haiku": Price(0.80, 4.00, 0.08),
    },
    "gemini": {
        "gemini-3-pro-preview": Price(2.00, 12.00, 0.20),
        "gemini-2.5-pro": Price(1.25, 10.00, 0.125),
        "gemini-2.5-flash": Price(0.30, 2.50, 0.03),
        "gemini-2.5-flash-lite": Price(0.10, 0.40, 0.01),
        "gemini-2.0-flash": Price(0.10, 0.40, 0.025),
        "gemini-2.0-flash-lite": Price(0.075, 0.30, 0.075),
    },
}


def _configured(entry: ModelEntry) -> Price | None:
    if entry.input_price is None or entry.output_price is None:
        return None
    cached = entry.cached_input_price
    return Price(
        entry.input_price, entry.output_price, entry.input_price if cached is None else cached
    )


def _match(model_id: str, prices: dict[str, Price]) -> Price | None:
    """Exact id, else the longest priced id the given one extends with a dated suffix (as the
    catalog matches `gpt-4o-2024-08-06` to `gpt-4o`)."""
    if model_id in prices:
        return prices[model_id]
    prefixed = [known for known in prices if model_id.startswith(known + "-")]
    return prices[max(prefixed, key=len)] if prefixed else None


@dataclass(frozen=True)
class Pricing:
    """Prices by provider kind and model: configured ones first, then the built-in list."""

    configured: dict[str, dict[str, Price]]

    @classmethod
    def of(cls, entries: Iterable[tuple[str, ModelEntry]] = ()) -> Pricing:
        """From `(provider kind, [[provider.models]] entry)` pairs; entries without both an
        input and an output price add nothing."""
        configured: dict[str, dict[str, Price]] = {}
        for kind, entry in entries:
            price = _configured(entry)
            if price is not None:
                configured.setdefault(kind, {})[entry.id] = price
        return cls(configured)

    @classmethod
    def from_settings(cls, settings: Settings) -> Pricing:
        """The model entries of `[provider]` and of the approval reviewer's own provider."""
        providers = [settings.provider]
        reviewer = settings.approvals.reviewer.provider
        if reviewer is not None:
            providers.append(reviewer)
        return cls.of((p.kind, entry) for p in providers for entry in p.models)

    def price(self, kind: str, model_id: str) -> Price | None:
        return _match(model_id, self.configured.get(kind, {})) or _match(
            model_id, BUILTIN_PRICES.get(kind, {})
        )
