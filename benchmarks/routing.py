"""Routing and fallback: what the router sends to the small model, what that saves, and how
many injected provider faults the fallback chain recovers from.

Sessions: the recorded oracle trajectories that `docs/results/*.jsonl` name, replayed
through the router, when those files are on disk. When they are not, scripted sessions
shaped like the recorded runs (each row's step and edit counts) run through the real loop
(runner, router, tools, sandbox, verifier, compaction) on generated repositories; the
output says which. Their tokens are the scripted model's estimates (4 characters a token)
and are priced at list prices without prompt-cache discounts, all-large against routed.

Faults: each kind injected `--faults` times against local servers speaking the OpenAI and
Anthropic wire protocols (tests/llm/fake_server.py), through the real providers and the
real fallback path (`llm.fallback`).

    PYTHONPATH=src:. python benchmarks/routing.py [--sessions 24] [--faults 5]

Last line: one JSON object (`calls_small_pct`, `cost_all_large_usd`, `cost_routed_usd`,
`saving_pct`, `fallback_recovered`, `fallback_injected`, ...).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.routing_faults import inject_faults

from codeloop.config import Settings
from codeloop.config_tables import Price
from codeloop.events import AuxiliaryModelCall, Event, ModelCallFinished, UsageData
from codeloop.llm.pricing import DEFAULT_PRICES, cost_of
from codeloop.llm.router import ROLES, RoleModels, Router
from codeloop.llm.scripted import ScriptedModel, Turn
from codeloop.session.setup import build_runner, open_store, start_session

ROOT = Path(__file__).resolve().parents[1]
RESULTS = sorted((ROOT / "docs" / "results").glob("*.jsonl"))
# One provider's large and small model, at the list prices in llm/pricing.py: OpenAI's
# GPT-4.1 ($2.00 / $8.00 per million input / output tokens) and GPT-4.1 mini ($0.40 /
# $1.60), as published with their launch on 2025-04-14.
LARGE, SMALL = "gpt-4.1", "gpt-4.1-mini"
PRICES: dict[str, Price] = {LARGE: DEFAULT_PRICES[LARGE], SMALL: DEFAULT_PRICES[SMALL]}
ESCALATE_AFTER = 2
# A structured summary of the length compaction asks for (about 800 tokens).
SUMMARY = "## Progress\n" + "Read the modules and located the faulty function. " * 64


# --- sessions shaped like the recorded runs -----------------------------------------------


def recorded_rows() -> list[dict[str, Any]]:
    """The resolved oracle runs of the results files (their shape: steps, edits)."""
    rows = []
    for path in RESULTS:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if row.get("outcome") == "resolved" and row.get("steps"):
                rows.append(row)
    return rows


def spread(rows: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """`count` rows evenly spaced over the step distribution (shortest and longest kept)."""
    ordered = sorted(rows, key=lambda r: (r["steps"], r["instance_id"]))
    if count >= len(ordered):
        return ordered
    return [ordered[round(i * (len(ordered) - 1) / (count - 1))] for i in range(count)]


def module_text(n: int, lines: int) -> str:
    """A module of about `lines` lines: many small functions, one marker comment each."""
    body = [f'"""Module {n}: generated for the routing benchmark."""\n']
    for k in range(lines // 8):
        body.append(f"\n\ndef f{n}_{k}(values, scale={k + 1}):\n    # marker {n}-{k}\n"
                    f"    total = sum(v * scale for v in values)\n"
                    f"    return total - {k} if total > {k} else total\n")
    return "".join(body)


def make_repo(root: Path, modules: int) -> Path:
    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "0"\n')
    for n in range(modules):
        (repo / "pkg" / f"mod{n}.py").write_text(module_text(n, 400 + 300 * (n % 4)))
    (repo / "pkg" / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\n"
                                          "def inc(x):\n    return x + 1\n")
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_calc.py").write_text(
        "import unittest\nfrom pkg.calc import add, inc\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
        "    def test_inc(self):\n        self.assertEqual(inc(1), 2)\n")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    return repo


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def script_for(row: dict[str, Any], modules: int, failing: bool) -> list[Turn]:
    """A session with the row's shape: the oracle's search and reads (of 250 lines here; the
    oracle reads 120), a plan, one edit per recorded edit, a test run, finish; a failing
    session first spends two fix rounds that break a passing test (the third, escalated,
    puts it right)."""
    edits = max(1, int(row.get("edits") or 1))
    reads = max(1, int(row["steps"]) - edits - 2)
    turns = [call("grep", pattern="def add")]
    for i in range(reads):
        start = 1 + (250 * (i // modules) + 7 * (i // (4 * modules))) % 400
        turns.append(call("read_file", path=f"pkg/mod{i % modules}.py", start_line=start,
                          end_line=start + 249))
    turns.append(call("propose_plan", summary="fix add()", steps=[
        {"id": "fix", "title": "fix add()"}, {"id": "test", "title": "run the tests",
                                              "depends_on": ["fix"]}]))
    if failing:
        turns += [call("edit_file", path="pkg/calc.py", old="return x + 1", new="return x + 2"),
                  call("run_tests"),
                  call("edit_file", path="pkg/calc.py", old="return x + 2", new="return x + 3"),
                  call("run_tests"),
                  call("edit_file", path="pkg/calc.py", old="return x + 3", new="return x + 1"),
                  call("run_tests")]
    turns.append(call("edit_file", path="pkg/calc.py", old="return a - b", new="return a + b"))
    for k in range(1, edits):
        marker = f"# marker {k % modules}-{k // modules}\n"
        turns.append(call("edit_file", path=f"pkg/mod{k % modules}.py", old=marker,
                          new=marker.replace("\n", " (checked)\n")))
    turns += [call("run_tests"), call("finish", summary="add() fixed; tests pass")]
    return [Turn(tool_calls=[t]) for t in turns]


def run_session(work: Path, row: dict[str, Any], index: int, window: int) -> list[Event]:
    """One scripted session through the real loop with a `window`-token context; its log."""
    modules = 6
    repo = make_repo(work, modules)
    large = ScriptedModel(script_for(row, modules, failing=index % 3 == 0), name=LARGE)
    small = ScriptedModel([Turn(text=SUMMARY)], name=SMALL)
    models = RoleModels({role: (small if role == "small" else large,) for role in ROLES})
    settings = Settings(context_window=window, models={"escalate_after": ESCALATE_AFTER},
                        budgets={"max_steps": 400, "max_tokens": 0})
    store = open_store(work / "data")
    sid = start_session(store, "make the tests pass", repo, settings, large.name)
    runner = build_runner(store, sid, repo, settings, large, base_dir=work / "data",
                          router=Router(models, ESCALATE_AFTER))
    state = runner.run()
    if state.status != "finished":
        raise SystemExit(f"session for {row['instance_id']} ended {state.status}: "
                         f"{state.finished.reason if state.finished else ''}")
    return [s.event for s in store.read(sid)]


def recorded_logs() -> list[list[Event]]:
    """The trajectories the results files name, when they are on disk (`codeloop export`)."""
    from codeloop.events import parse_event

    logs = []
    for row in recorded_rows():
        path = Path(row.get("trajectory") or "/nonexistent")
        if path.is_file():
            doc = json.loads(path.read_text())
            logs.append([parse_event(e) for e in doc["events"]])
    return logs


# --- pricing ----------------------------------------------------------------------------

# The model each role's calls are priced at. The log says which role served each call, so
# one run of the sessions prices under every configuration. "quality" is the issue's own
# shape (code on the large model, condensing on the small); "cost" also writes code on the
# small one, planning and escalation staying large (architect and editor).
CONFIGS: dict[str, dict[str, str]] = {
    "quality": {"planner": LARGE, "coder": LARGE, "escalate": LARGE, "reviewer": LARGE,
                "small": SMALL},
    "cost": {"planner": LARGE, "coder": SMALL, "escalate": LARGE, "reviewer": LARGE,
             "small": SMALL},
}
FIGURES = ("calls", "small_calls", "tokens", "small_tokens", "all_large", "routed")


def calls_of(log: Iterable[Event]) -> Iterable[tuple[str, str, UsageData]]:
    """(purpose, role, usage) of every model call in a log."""
    for event in log:
        if isinstance(event, ModelCallFinished):
            purpose = "coding (escalated)" if event.role == "escalate" else event.purpose
            yield purpose or "turn", event.role or "coder", event.usage
        elif isinstance(event, AuxiliaryModelCall) and event.ok:
            yield event.purpose, event.role, event.usage


def tally(logs: list[list[Event]], config: dict[str, str]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(FIGURES, 0.0))
    for log in logs:
        for purpose, role, usage in calls_of(log):
            row = table[purpose]
            tokens = usage.input_tokens + usage.output_tokens
            small = config[role] == SMALL
            row["calls"] += 1
            row["tokens"] += tokens
            row["small_calls"] += small
            row["small_tokens"] += tokens if small else 0
            row["all_large"] += cost_of(usage, PRICES[LARGE])
            row["routed"] += cost_of(usage, PRICES[config[role]])
    return table


def _line(name: str, r: dict[str, float]) -> str:
    return (f"  {name:<20} {int(r['calls']):>6} {100 * r['small_calls'] / r['calls']:>6.1f}% "
            f"{int(r['tokens']):>11,} {100 * r['small_tokens'] / max(r['tokens'], 1):>6.1f}% "
            f"{r['all_large']:>12.4f} {r['routed']:>10.4f}")


def report(logs: list[list[Event]], config_name: str) -> dict[str, Any]:
    """Print the per-purpose table for one configuration; its figures."""
    config = CONFIGS[config_name]
    table = tally(logs, config)
    roles = ", ".join(f"{role} {model}" for role, model in config.items())
    print(f"configuration {config_name!r}: {roles}")
    print(f"  {'purpose':<20} {'calls':>6} {'small':>7} {'tokens':>11} {'small':>7} "
          f"{'all-large $':>12} {'routed $':>10}")
    for purpose, r in sorted(table.items(), key=lambda kv: -kv[1]["tokens"]):
        print(_line(purpose, r))
    total = {k: sum(r[k] for r in table.values()) for k in FIGURES}
    saving = 100 * (1 - total["routed"] / total["all_large"]) if total["all_large"] else 0.0
    print(f"{_line('all', total)}  saving {saving:.1f}%")
    return {"calls_small_pct": round(100 * total["small_calls"] / total["calls"], 2),
            "tokens_small_pct": round(100 * total["small_tokens"] / total["tokens"], 2),
            "cost_all_large_usd": round(total["all_large"], 4),
            "cost_routed_usd": round(total["routed"], 4), "saving_pct": round(saving, 2)}


def sessions(args: argparse.Namespace) -> list[tuple[str, list[list[Event]]]]:
    """(what they are, their logs): the recorded trajectories, else scripted sessions."""
    recorded = recorded_logs()
    if recorded:
        return [("recorded oracle trajectories replayed through the router", recorded)]
    rows = spread(recorded_rows(), args.sessions)
    source = (f"scripted sessions shaped like {len(rows)} recorded oracle runs (steps and "
              f"edits of {', '.join(p.name for p in RESULTS)}; the trajectory files they name "
              "are not on disk), run through the real loop")
    out = []
    for window in (int(w) for w in args.windows.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            logs = [run_session(Path(tmp) / f"s{i}", row, i, window)
                    for i, row in enumerate(rows)]
        out.append((f"{source}, context window {window:,} tokens", logs))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=24)
    parser.add_argument("--windows", default="128000,32000",
                        help="context windows to run the sessions at (comma-separated); the "
                             "first gives the headline figures")
    parser.add_argument("--faults", type=int, default=5, help="injections of each fault kind")
    args = parser.parse_args()
    begin = time.perf_counter()
    runs: list[dict[str, Any]] = []
    for source, logs in sessions(args):
        print(f"{len(logs)} sessions: {source}; list prices {LARGE} (large), {SMALL} (small), "
              "no cache discounts")
        runs.append({"source": source, "sessions": len(logs),
                     **{name: report(logs, name) for name in CONFIGS}})
        print()
    # The headline is the issue's own shape (code on the large model) at the first window.
    figures: dict[str, Any] = {"config": "quality", **runs[0]["quality"],
                               "sessions": runs[0]["sessions"], "source": runs[0]["source"],
                               "runs": runs}
    figures.update(inject_faults(args.faults))
    figures["seconds"] = round(time.perf_counter() - begin, 1)
    print(json.dumps(figures))


if __name__ == "__main__":
    sys.exit(main())
