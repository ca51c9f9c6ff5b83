"""A model factory for sessions on Ray workers that can hold one model call at a known step.

Ray pickles it by reference, so a worker process builds the same thing. The hold is
signalled through files: the worker writes its pid to `reached` and waits for `release`;
once `release` exists nothing holds (a resumed run goes straight through)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from codeloop.config import Settings
from codeloop.llm.factory import make_model
from codeloop.llm.types import Completion, DeltaCallback, Model, ModelRequest


@dataclass(frozen=True)
class GatedFactory:
    gate_dir: Path
    hold_at: int = 0  # the n-th model call of a worker's run holds (0: never)

    def hold_point(self) -> int:
        """`hold_at`, unless a `hold_at` file in the gate dir says otherwise (benchmarks vary it)."""
        override = self.gate_dir / "hold_at"
        return int(override.read_text()) if override.exists() else self.hold_at

    def __call__(self, spec: str, settings: Settings) -> Model:
        return _Gated(make_model(spec, settings), self)


class _Gated:
    def __init__(self, inner: Model, factory: GatedFactory) -> None:
        self.inner = inner
        self.name = inner.name
        self.factory = factory
        self.calls = 0

    def complete(self, request: ModelRequest, on_delta: DeltaCallback | None = None) -> Completion:
        self.calls += 1
        gate = self.factory.gate_dir
        (gate / "pids").mkdir(parents=True, exist_ok=True)
        (gate / "pids" / str(os.getpid())).touch()
        if self.calls == self.factory.hold_point() and not (gate / "release").exists():
            (gate / "reached.tmp").write_text(str(os.getpid()))
            (gate / "reached.tmp").rename(gate / "reached")
            deadline = time.monotonic() + 120
            while not (gate / "release").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return self.inner.complete(request, on_delta)
