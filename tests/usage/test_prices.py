"""Prices: configured entries first, then the built-in list; unknown models have none."""

from __future__ import annotations

import pytest

from mind.providers.catalog import BUILTIN
from mind.providers.prices import BUILTIN_PRICES, Price, Pricing
from tobe.config import ModelEntry


def entry(model_id: str, **prices: float) -> ModelEntry:
    return ModelEntry(id=model_id, context_window=8192, max_output=1024, **prices)


def test_every_built_in_model_has_a_list_price() -> None:
    for kind, models in BUILTIN.items():
        assert {info.id for info in models} == set(BUILTIN_PRICES[kind]), kind


def test_cost_charges_cached_input_at_its_own_price_and_reasoning_as_output() -> None:
    price = Price(input=2.0, output=10.0, cached_input=0.5)

    # 1,000,000 input of which 400,000 cached; 100,000 output.
    assert price.cost(1_000_000, 100_000, 400_000) == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 1.0)


def test_a_configured_price_wins_and_cached_input_defaults_to_the_input_price() -> None:
    pricing = Pricing.of(
        [
            ("openai", entry("gpt-4o", input_price=1.0, output_price=3.0)),
            ("openai", entry("qwen2.5:7b", input_price=0.0, output_price=0.0)),
        ]
    )

    assert pricing.price("openai", "gpt-4o") == Price(1.0, 3.0, 1.0)
    assert pricing.price("openai", "qwen2.5:7b") == Price(0.0, 0.0, 0.0)
    assert pricing.price("anthropic", "claude-sonnet-4-5") == Price(3.0, 15.0, 0.30)


def test_a_dated_model_id_takes_its_family_price_and_an_unknown_model_has_none() -> None:
    pricing = Pricing.of([("openai", entry("llama3", input_price=1.0))])

    assert pricing.price("openai", "gpt-4o-2024-08-06") == BUILTIN_PRICES["openai"]["gpt-4o"]
    assert pricing.price("openai", "gpt-4o-mini-2024-07-18") == Price(0.15, 0.60, 0.075)
    # Only an input price: not enough to estimate.
    assert pricing.price("openai", "llama3") is None
    assert pricing.price("scripted", "demo") is None
