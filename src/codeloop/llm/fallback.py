"""Falling back along a chain of models when a provider cannot answer.

An outage moves the call to the next model: a provider error after the provider's own
retries (5xx, a dropped or refused connection, a timeout), a rate limit past the retry
budget, a model the endpoint does not serve. A request too long for the model's window is
compacted first and sent to the same model once more; only then does it move on. A refused
key is a configuration error, never a reason to send the work (and the prompt) elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from codeloop.llm.types import (
    AuthenticationFailed,
    Completion,
    ContextWindowExceeded,
    DeltaCallback,
    Model,
    ModelError,
    ModelNotFound,
    ModelRequest,
    ProviderUnavailable,
    RateLimited,
)

# What moves a call to the next model (a too-long request too, once compaction did not help).
OUTAGES: tuple[type[ModelError], ...] = (ProviderUnavailable, RateLimited, ModelNotFound)
_MOVES_ON: tuple[type[ModelError], ...] = (*OUTAGES, ContextWindowExceeded)
_ERROR_CHARS = 300

# Given the request a model refused as too long, a smaller one (compacted and recorded by
# the caller), or None when nothing can be taken out.
Shrink = Callable[[ModelRequest, ContextWindowExceeded], ModelRequest | None]


@dataclass(frozen=True)
class FellBack:
    """One move along the chain, for the session's log."""

    from_model: str
    to_model: str
    cause: str
    error: str


def shortened(text: str, limit: int = _ERROR_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def complete_with_fallback(
    chain: Sequence[Model], request: ModelRequest, on_delta: DeltaCallback | None = None, *,
    on_fall_back: Callable[[FellBack], None] | None = None, shrink: Shrink | None = None,
) -> tuple[Completion, Model]:
    """The first answer along `chain` and the model that gave it; the last error when every
    model failed, or at once for an error no other model would change."""
    if not chain:
        raise ValueError("an empty chain of models")
    for index, model in enumerate(chain):
        outcome = _outcome(model, request, on_delta)
        if isinstance(outcome, ContextWindowExceeded) and shrink is not None:
            smaller = shrink(request, outcome)
            if smaller is not None:
                # Later models get the compacted request too: the log already says so.
                request = smaller
                outcome = _outcome(model, request, on_delta)
        if isinstance(outcome, Completion):
            return outcome, model
        if index + 1 == len(chain):
            raise outcome
        if on_fall_back is not None:
            on_fall_back(FellBack(model.name, chain[index + 1].name, outcome.kind,
                                  shortened(outcome.message)))
    raise AssertionError("unreachable: the last model answers or raises")


def _outcome(model: Model, request: ModelRequest, on_delta: DeltaCallback | None
              ) -> Completion | ModelError:
    """The model's answer, or the error that lets the chain go on; any other error raises."""
    try:
        return model.complete(request, on_delta)
    except AuthenticationFailed as exc:
        raise AuthenticationFailed(
            f"{exc.message} (a configuration error: no fallback model was tried)",
            exc.hint) from exc
    except _MOVES_ON as exc:
        return exc
