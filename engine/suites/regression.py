"""Is a suite's run significantly worse (or better) than its previous complete run?

For each strategy both runs evaluated, the suite's metric per query is paired over the queries both
runs hold (by text, as the gate pairs: engine/gate.py), and the one paired procedure of the app
(engine/statistics/paired.py, its margin form) is applied both ways, each adjusted for the m
strategies compared (level 1 - alpha/m):

- a **drop**: ``margin_tests([(after, before), ...], margin)``: the adjusted interval of
  after - before lies entirely below -margin;
- a **gain**: the same test the other way, ``margin_tests([(before, after), ...], margin)``: the
  interval lies entirely above +margin.

Both use the same resample draw (seeded), so the interval reported is one interval (after - before)
and a change is never both. A metric where lower is better is turned so that larger is better
first, as the gate does. Only a drop alerts (engine/suites/suite_run.py); a gain is recorded and marked.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from searchgrade.engine.metrics import higher_is_better, parse_metric
from searchgrade.engine.run.stored_metrics import per_query_values
from searchgrade.engine.run.strategies import strategy_order
from searchgrade.engine.statistics.paired import PairedDifference, interval_words, margin_tests, p_words
from searchgrade.engine.store import RunRecord, Store

#: Queries listed in an alert as those that dropped most.
WORST_QUERIES = 3
RESAMPLES = 10_000


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
    #: Adjusted p-value of the direction found ("drop" or "gain"), else the smaller of the two.
    p_value: float
    n: int
    m: int
    #: "drop", "gain" or None (not distinguishable from no change beyond the margin).
    verdict: str | None
    #: The queries whose value fell most: (text, before, after).
    dropped: list[tuple[str, float, float]] = field(default_factory=list)

    def interval(self) -> str:
        return interval_words(PairedDifference(self.change, self.ci_low, self.ci_high, self.p_value, self.n,
                                               self.m), decimals=3)

    def line(self) -> str:
        """ "ann dcg@10: 4.210 -> 3.120 (change -1.090, 95% CI -1.4 to -0.8, adjusted for 2 comparisons;
        adjusted p = 0.001)"."""
        return (f"{self.strategy} {self.metric}: {self.before:.3f} -> {self.after:.3f} (change "
                f"{self.change:+.3f}, {self.interval()}; adjusted {p_words(self.p_value)})")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StrategyChange:
        d = dict(d)
        d["dropped"] = [tuple(x) for x in d.get("dropped") or []]
        return cls(**d)


def _values(store: Store, run: RunRecord, metric: str, k: int) -> pd.DataFrame:
    values = per_query_values(store, run, metric, k)
    texts = pd.DataFrame(store.queries(run.run_id), columns=["query_id", "text", "query_type", "source_doc_id"])
    unique = ~texts["text"].duplicated(keep=False)
    texts["key"] = texts["text"].where(unique, texts["query_id"] + "\x1f" + texts["text"])
    return values.merge(texts[["query_id", "key", "text"]], on="query_id")[["strategy", "key", "text", "value"]]


def compare_runs(store: Store, before_id: str, after_id: str, metric: str, margin: float) -> list[StrategyChange]:
    """Each shared strategy's change from ``before`` to ``after`` with its verdict (module docstring).

    Both runs must be complete; strategies without a shared query are left out.
    """
    spec = parse_metric(metric)
    before, after = store.get_run(before_id), store.get_run(after_id)
    k = spec.resolve_k(after.k, after.depth)
    a = _values(store, before, spec.key, min(k, before.depth))
    b = _values(store, after, spec.key, min(k, after.depth))
    pairs = a.merge(b.drop(columns="text"), on=["strategy", "key"], suffixes=("_before", "_after")).dropna()
    strategies = [s for s in strategy_order(set(pairs["strategy"]))]
    groups = [(s, pairs[pairs["strategy"] == s].sort_values("key")) for s in strategies]
    if not groups:
        return []
    sign = 1.0 if higher_is_better(spec.name) else -1.0
    after_vs = [(sign * g["value_after"].to_numpy(), sign * g["value_before"].to_numpy()) for _, g in groups]
    before_vs = [(y, x) for x, y in after_vs]
    drops = margin_tests(after_vs, margin, n_resamples=RESAMPLES, seed=0)
    gains = margin_tests(before_vs, margin, n_resamples=RESAMPLES, seed=0)
    label = f"{spec.key}@{k}"
    out = []
    for (strategy, g), drop, gain in zip(groups, drops, gains, strict=True):
        d = drop.difference
        low, high = (sorted((sign * d.ci_low + 0.0, sign * d.ci_high + 0.0)) if d.estimable
                     else (d.ci_low, d.ci_high))
        verdict = "drop" if drop.worse else "gain" if gain.worse else None
        p = drop.p_value if verdict == "drop" else gain.p_value if verdict == "gain" else min(drop.p_value,
                                                                                                gain.p_value)
        delta = sign * (g["value_after"] - g["value_before"])
        worst = g.assign(delta=delta.to_numpy()).sort_values(["delta", "key"]).head(WORST_QUERIES)
        dropped = [(str(r.text), float(r.value_before), float(r.value_after))
                   for r in worst.itertuples() if r.delta < 0]
        out.append(StrategyChange(strategy, label, float(g["value_before"].mean()), float(g["value_after"].mean()),
                                  sign * d.diff + 0.0, float(low), float(high), float(p), d.n, d.m, verdict,
                                  dropped))
    return out
