"""Is a suite's run significantly worse (or better) than its previous complete run?

The suite's metric is compared by the one way of the app (engine/statistics/pairing.py, as the
gate and Compare compare): per strategy both runs evaluated, paired per query by the pairing rule,
in one order, with the one resample policy, each change's interval adjusted for the m strategies
compared (level 1 - alpha/m). The verdict is the gate's:

- a **drop** when the change is significantly worse (the interval lies entirely on the worse side
  of 0) and the estimated change is worse than the suite's margin: it alerts
  (engine/suites/suite_run.py), as the gate would fail it;
- a **gain** likewise on the better side: recorded and marked, never alerted.

A significant change within the margin, or one whose interval reaches 0, is neither.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from searchgrade.engine.statistics.paired import PairedDifference, interval_words, p_words
from searchgrade.engine.statistics.pairing import compare_runs as compare
from searchgrade.engine.store import Store

#: Queries listed in an alert as those that dropped most.
WORST_QUERIES = 3


@dataclass
class StrategyChange:
    """One strategy's change between two runs of a suite, in the metric's own direction."""

    strategy: str
    metric: str
    before: float
    after: float
    change: float
    ci_low: float
    ci_high: float
    #: Adjusted p-value of the change (below alpha exactly when its interval excludes 0).
    p_value: float
    n: int
    m: int
    #: "drop", "gain" or None (noise, or a significant change within the margin).
    verdict: str | None
    #: The queries whose value fell most: (text, before, after).
    dropped: list[tuple[str, float, float]] = field(default_factory=list)

    def interval(self) -> str:
        return interval_words(PairedDifference(self.change, self.ci_low, self.ci_high, self.p_value, self.n,
                                               self.m), decimals=3)

    def line(self) -> str:
        """ "ANN (dense) DCG@10: 4.210 -> 3.120 (change -1.090, 95% CI -1.4 to -0.8, adjusted for 2
        comparisons; adjusted p = 0.001)": the strategy and the metric by their names on the pages."""
        from searchgrade.engine.metrics import metric_record, parse_metric
        from searchgrade.engine.run.strategies import label

        spec = parse_metric(self.metric)
        metric = f"{metric_record(spec.key).label}" + (f"@{spec.k}" if spec.k else "")
        return (f"{label(self.strategy)} {metric}: {self.before:.3f} -> {self.after:.3f} (change "
                f"{self.change:+.3f}, {self.interval()}; adjusted {p_words(self.p_value)})")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StrategyChange:
        d = dict(d)
        d["dropped"] = [tuple(x) for x in d.get("dropped") or []]
        return cls(**d)


def compare_runs(store: Store, before_id: str, after_id: str, metric: str, margin: float) -> list[StrategyChange]:
    """Each shared strategy's change from ``before`` to ``after`` with its verdict (module docstring).

    Both runs must be complete; strategies without a shared query are left out.

    Raises:
        SearchGradeError: the metric cannot compare these runs (engine/statistics/pairing.py's checks).
    """
    result = compare(store, before_id, after_id, metric, margin=margin, where="suite metric")
    paired = result.paired
    out = []
    for change in result.changes:
        rows, before, after = paired.pair(change.strategy)
        sign = 1.0 if change.higher_is_better else -1.0
        delta = sign * (after - before)
        # The queries that fell most, the largest fall first (ties by query id: the pairing's order).
        worst = np.argsort(delta, kind="stable")[:WORST_QUERIES]
        dropped = [(str(paired.texts[rows[i]]), float(before[i]), float(after[i])) for i in worst if delta[i] < 0]
        d = change.difference
        out.append(StrategyChange(change.strategy, result.label, change.before, change.after, d.diff + 0.0,
                                  d.ci_low, d.ci_high, d.p_value, d.n, d.m, change.verdict, dropped))
    return out
