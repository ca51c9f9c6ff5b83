"""Event store speed: p50/p95 of one append, and loading + folding a 1,000-event session.

Usage: python benchmarks/event_store.py [--appends N]
Goals: append p50 < 1 ms; load and fold of 1,000 events < 50 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from codeloop.events import (
    Event,
    ModelCallFinished,
    SessionStarted,
    ToolCallData,
    ToolCallFinished,
    ToolCallStarted,
    UsageData,
)
from codeloop.session.state import fold
from codeloop.session.store import SQLiteEventStore


def realistic_events(n: int) -> list[Event]:
    """A session-like mix: model turns with a tool call, its start and a 2 KB result."""
    out: list[Event] = [SessionStarted(task="fix the bug", repo="/r", model="m",
                                       system_prompt="x" * 3000)]
    step = 0
    while len(out) < n:
        step += 1
        call = ToolCallData(id=f"c{step}", name="read_file", arguments={"path": f"f{step}.py"})
        out.append(ModelCallFinished(step=step, model="m", text="Looking at the file." * 5,
                                     tool_calls=[call], usage=UsageData(input_tokens=5000,
                                                                        output_tokens=200)))
        out.append(ToolCallStarted(step=step, call=call))
        out.append(ToolCallFinished(step=step, call_id=call.id, name="read_file", ok=True,
                                    output="line of code\n" * 160))
    return out[:n]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteEventStore(Path(tmp) / "events.sqlite")
        store.create("bench")
        events = realistic_events(args.appends)
        times = []
        for event in events:
            begin = time.perf_counter()
            store.append("bench", [event])
            times.append((time.perf_counter() - begin) * 1000)

        store.create("fold")
        store.append("fold", realistic_events(1000))
        folds = []
        for _ in range(20):
            fresh = SQLiteEventStore(Path(tmp) / "events.sqlite")
            begin = time.perf_counter()
            state = fold(fresh.read("fold"))
            folds.append((time.perf_counter() - begin) * 1000)
        assert state.last_seq == 1000

    result = {
        "append_p50_ms": round(statistics.median(times), 3),
        "append_p95_ms": round(pct(times, 0.95), 3),
        "fold_1000_ms": round(statistics.median(folds), 2),
        "fold_1000_p95_ms": round(pct(folds, 0.95), 2),
    }
    print(f"append: p50 {result['append_p50_ms']} ms, p95 {result['append_p95_ms']} ms "
          f"({args.appends} single-event appends, WAL, synchronous=NORMAL)")
    print(f"load + fold 1,000 events: median {result['fold_1000_ms']} ms, "
          f"p95 {result['fold_1000_p95_ms']} ms")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
