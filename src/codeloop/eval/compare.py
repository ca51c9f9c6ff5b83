"""Paired comparison of two runs: is a difference in resolved, cost or steps real?

Resolved is compared with McNemar's exact test on the instances both runs judged (only the
instances that flipped carry information); cost and steps with a bootstrap interval of the
mean paired difference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codeloop.eval.records import Record

BOOTSTRAP_RESAMPLES = 5000


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float

    def to_json(self) -> dict[str, float]:
        return {"mean": self.mean, "low": self.low, "high": self.high}


@dataclass
class Comparison:
    paired: int
    resolved_a: int
    resolved_b: int
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    mcnemar_p: float = 1.0
    cost_diff: Interval = Interval(0.0, 0.0, 0.0)
    steps_diff: Interval = Interval(0.0, 0.0, 0.0)
    unpaired: int = 0

    @property
    def significant(self) -> bool:
        return self.mcnemar_p < 0.05

    def to_json(self) -> dict[str, Any]:
        return {"paired": self.paired, "unpaired": self.unpaired,
                "resolved_a": self.resolved_a, "resolved_b": self.resolved_b,
                "flipped_to_resolved": self.only_b, "flipped_to_unresolved": self.only_a,
                "mcnemar_p": self.mcnemar_p, "significant": self.significant,
                "cost_diff_usd": self.cost_diff.to_json(), "steps_diff": self.steps_diff.to_json()}


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    # Imported here: scipy.stats costs half a second, and every CLI start imports this module.
    from scipy.stats import binomtest

    return float(binomtest(min(only_a, only_b), n, 0.5).pvalue)


def bootstrap_mean(diffs: list[float], seed: int = 0,
                   resamples: int = BOOTSTRAP_RESAMPLES) -> Interval:
    """The mean of `diffs` with a 95% percentile bootstrap interval (seeded: reports repeat)."""
    if not diffs:
        return Interval(0.0, 0.0, 0.0)
    import numpy as np

    values = np.asarray(diffs, dtype=float)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Interval(round(float(values.mean()), 6), round(float(low), 6), round(float(high), 6))


def bootstrap_grouped_mean(groups: list[list[float]], seed: int = 0,
                           resamples: int = BOOTSTRAP_RESAMPLES) -> Interval:
    """The mean of all values in `groups` with a 95% interval from resampling whole groups
    (values of one group, e.g. the queries of one task, are not independent)."""
    groups = [g for g in groups if g]
    if not groups:
        return Interval(0.0, 0.0, 0.0)
    import numpy as np

    sums = np.asarray([sum(g) for g in groups], dtype=float)
    counts = np.asarray([len(g) for g in groups], dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(resamples, len(groups)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Interval(round(float(sums.sum() / counts.sum()), 6), round(float(low), 6),
                    round(float(high), 6))


def _by_instance(records: list[Record]) -> dict[str, Record]:
    return {r.instance_id: r for r in records if r.judged}


def compare(a: list[Record], b: list[Record]) -> Comparison:
    """B against A on the instances both judged; differences are B minus A."""
    left, right = _by_instance(a), _by_instance(b)
    common = sorted(left.keys() & right.keys())
    only_a = [i for i in common if left[i].resolved and not right[i].resolved]
    only_b = [i for i in common if right[i].resolved and not left[i].resolved]
    return Comparison(
        paired=len(common),
        unpaired=len(left.keys() ^ right.keys()),
        resolved_a=sum(left[i].resolved for i in common),
        resolved_b=sum(right[i].resolved for i in common),
        only_a=only_a, only_b=only_b,
        mcnemar_p=round(mcnemar_exact(len(only_a), len(only_b)), 6),
        cost_diff=bootstrap_mean([right[i].cost_usd - left[i].cost_usd for i in common]),
        steps_diff=bootstrap_mean([float(right[i].steps - left[i].steps) for i in common]),
    )
