"""A regression gate for CI: a run fails against its baseline when resolved drops or
cost or steps rise past the thresholds."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean

from codeloop.eval.compare import compare
from codeloop.eval.records import Record


@dataclass(frozen=True)
class Thresholds:
    # Resolved instances the run may lose against the baseline (on the paired instances).
    max_resolved_drop: int = 0
    # Relative rise of the mean cost / mean steps per paired instance (0.1 = 10%).
    max_cost_rise: float = 0.10
    max_steps_rise: float = 0.10


@dataclass
class GateResult:
    passed: bool
    failures: list[str] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)


def _rise(new: float, old: float) -> float:
    if old == 0:
        return 0.0 if new == 0 else float("inf")
    return (new - old) / old


def gate(run: list[Record], baseline: list[Record], limits: Thresholds) -> GateResult:
    """Check `run` against `baseline` on the instances both judged."""
    cmp = compare(baseline, run)
    failures: list[str] = []
    if cmp.paired == 0:
        return GateResult(False, ["the run and the baseline judged no instance in common"])
    drop = cmp.resolved_a - cmp.resolved_b
    if drop > limits.max_resolved_drop:
        failures.append(f"resolved dropped by {drop} ({cmp.resolved_a} -> {cmp.resolved_b} of "
                        f"{cmp.paired}; allowed {limits.max_resolved_drop}); newly unresolved: "
                        + ", ".join(cmp.only_a))
    base = {r.instance_id: r for r in baseline if r.judged}
    paired = [r for r in run if r.judged and r.instance_id in base]
    cost_old = fmean(base[r.instance_id].cost_usd for r in paired)
    cost_new = fmean(r.cost_usd for r in paired)
    steps_old = fmean(base[r.instance_id].steps for r in paired)
    steps_new = fmean(r.steps for r in paired)
    cost_rise, steps_rise = _rise(cost_new, cost_old), _rise(steps_new, steps_old)
    if cost_rise > limits.max_cost_rise:
        failures.append(f"mean cost rose {cost_rise:.0%} (${cost_old:.4f} -> ${cost_new:.4f}; "
                        f"allowed {limits.max_cost_rise:.0%})")
    if steps_rise > limits.max_steps_rise:
        failures.append(f"mean steps rose {steps_rise:.0%} ({steps_old:.1f} -> {steps_new:.1f}; "
                        f"allowed {limits.max_steps_rise:.0%})")
    figures = {"paired": float(cmp.paired), "resolved_baseline": float(cmp.resolved_a),
               "resolved_run": float(cmp.resolved_b), "cost_rise": round(cost_rise, 4),
               "steps_rise": round(steps_rise, 4)}
    return GateResult(not failures, failures, figures)
