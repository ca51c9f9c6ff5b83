"""Prices per million tokens for common models; config can add or override entries."""

from __future__ import annotations

from collections.abc import Mapping

from codeloop.config_tables import Price
from codeloop.events import UsageData

# Public list prices (USD per 1M tokens) as published by the providers; overridable in config.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(input=2.50, output=10.00, cache_read=1.25),
    "gpt-4o-mini": Price(input=0.15, output=0.60, cache_read=0.075),
    "gpt-4.1": Price(input=2.00, output=8.00, cache_read=0.50),
    "gpt-4.1-mini": Price(input=0.40, output=1.60, cache_read=0.10),
    "gpt-4.1-nano": Price(input=0.10, output=0.40, cache_read=0.025),
    "gpt-5": Price(input=1.25, output=10.00, cache_read=0.125),
    "gpt-5-mini": Price(input=0.25, output=2.00, cache_read=0.025),
    "o3": Price(input=2.00, output=8.00, cache_read=0.50),
    "o4-mini": Price(input=1.10, output=4.40, cache_read=0.275),
    "claude-opus-4": Price(input=15.00, output=75.00, cache_read=1.50, cache_write=18.75),
    "claude-sonnet-4": Price(input=3.00, output=15.00, cache_read=0.30, cache_write=3.75),
    "claude-3-7-sonnet": Price(input=3.00, output=15.00, cache_read=0.30, cache_write=3.75),
    "claude-3-5-haiku": Price(input=0.80, output=4.00, cache_read=0.08, cache_write=1.00),
    "claude-haiku-4": Price(input=1.00, output=5.00, cache_read=0.10, cache_write=1.25),
}


def find_price(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price for `model`, matching the longest known name it starts with."""
    table = {**DEFAULT_PRICES, **(overrides or {})}
    if model in table:
        return table[model]
    bare = model.split("/")[-1]
    matches = [name for name in table if bare.startswith(name)]
    return table[max(matches, key=len)] if matches else None


def cost_of(usage: UsageData, price: Price | None) -> float:
    if price is None:
        return 0.0
    uncached = max(usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0)
    cache_read = price.cache_read if price.cache_read is not None else price.input
    cache_write = price.cache_write if price.cache_write is not None else price.input
    total = (
        uncached * price.input
        + usage.cache_read_tokens * cache_read
        + usage.cache_write_tokens * cache_write
        + usage.output_tokens * price.output
    )
    return total / 1_000_000
