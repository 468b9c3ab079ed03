"""Quality against cost on Results: each strategy's figure beside what it costs, the strategies no
other beats on both (the Pareto front), and the cheapest strategy not significantly worse than the
best.

Quality is the page's metric at its k (point estimates; each strategy's 95% CI drawn beside it).
Cost is one of ``COST_AXES`` (viewmodels/costs.py), lower being cheaper. A strategy is *dominated*
when another one is at least as good and at least as cheap, and better or cheaper (point estimates:
a dominated strategy may still be indistinguishable from the one that dominates it, which the
paired tests say). "Not significantly worse than the best" is the page's own paired test (the
headline's family): the cheapest of those is named beside the best.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from searchgrade.engine.metrics import higher_is_better
from searchgrade.engine.run.strategies import label
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import Sentence, best_row, metric_label
from searchgrade.viewmodels.costs import COST_AXES, cost_rows
from searchgrade.viewmodels.significance import figures_text

#: The cost the recommendation weighs by: what every query pays.
RECOMMENDATION_AXIS = "p50_ms"


@dataclass
class QualityCost:
    """The quality-vs-cost view of one run at metric@k, against one cost axis.

    Attributes:
        points: strategy, label, settings, value, ci_low, ci_high, cost, dominated, dominated_by.
        table: every cost figure per strategy, for the table under the chart.
        axes: the cost axes the run has figures for (two strategies or more), key -> words.
    """

    metric: str
    k: int
    axis: str
    points: pd.DataFrame
    table: pd.DataFrame
    axes: dict[str, str]

    @property
    def name(self) -> str:
        return metric_label(self.metric, self.k)

    @property
    def dominated(self) -> list[str]:
        return self.points.loc[self.points["dominated"], "label"].tolist()


def dominated_by(quality: dict[str, float], cost: dict[str, float], higher: bool = True) -> dict[str, str | None]:
    """For each strategy, one that dominates it (at least as good and as cheap, strictly one of
    them), or None when none does: the Pareto front is the strategies mapped to None.

    Args:
        quality: strategy -> its figure.
        cost: strategy -> its cost (lower is cheaper); strategies without one are left out.
        higher: a higher figure is better.
    """
    def better_or_equal(a: float, b: float) -> bool:
        return a >= b if higher else a <= b

    out: dict[str, str | None] = {}
    for s in cost:
        out[s] = None
        for other in cost:
            if other == s:
                continue
            no_worse = better_or_equal(quality[other], quality[s]) and cost[other] <= cost[s]
            strictly = quality[other] != quality[s] or cost[other] < cost[s]
            if no_worse and strictly:
                out[s] = other
                break
    return out


def settings_text(run: RunRecord, strategy: str) -> str:
    """What a strategy is, in a few words: "built-in", or a variant's kind, model, chunking, aggregate."""
    declared = ((run.config or {}).get("declared") or {}).get(strategy)
    if declared is None:
        return "built-in" if label(strategy) != strategy else "declared"
    kind = declared.get("kind")
    if kind not in ("ann", "fulltext", "hybrid"):
        return str(kind)
    parts = [kind]
    if declared.get("embedding_model"):
        parts.append(str(declared["embedding_model"]).rstrip("/").rsplit("/", 1)[-1])
    for key in ("embedding_backend", "ann_index"):
        if declared.get(key):
            parts.append(str(declared[key]))
    for key in ("bm25_k1", "bm25_b"):
        if declared.get(key) is not None:
            parts.append(f"{key.removeprefix('bm25_')} {declared[key]:g}")
    chunking = declared.get("chunking")
    if chunking:
        parts.append(f"{chunking['method']} {chunking['size']}/{chunking.get('overlap', 0)}, {declared.get('aggregate')}")
    if kind == "hybrid":
        parts.append(" + ".join(declared.get("inputs") or []))
    return " · ".join(parts)


def quality_cost(store: Store, run: RunRecord, summary: pd.DataFrame, metric: str, k: int, axis: str = "p50_ms",
                 latency: list[dict[str, Any]] | None = None) -> QualityCost | None:
    """The view at ``summary``'s figures (the page's metric rows: strategy, value, ci_low, ci_high);
    None for a run without cost figures (made before they were recorded), or with no cost that two
    of its strategies have (a lone strategy is weighed against nothing)."""
    if not (run.stats or {}).get("costs") or summary.empty:
        return None
    costs = {r["strategy"]: r for r in cost_rows(store, run, latency)}
    axes = {key: words for key, words in COST_AXES.items()
            if sum(costs.get(s, {}).get(key) is not None for s in summary["strategy"]) >= 2}
    if not axes:
        return None
    if axis not in axes:
        axis = next(iter(axes), axis)
    rows = summary.set_index("strategy")
    quality = {s: float(rows.loc[s, "value"]) for s in rows.index}
    cost = {s: float(costs[s][axis]) for s in rows.index if costs.get(s, {}).get(axis) is not None}
    beaten = dominated_by(quality, cost, higher_is_better(metric))
    points = pd.DataFrame([{
        "strategy": s, "label": label(s), "settings": settings_text(run, s), "value": quality[s],
        "ci_low": float(rows.loc[s, "ci_low"]), "ci_high": float(rows.loc[s, "ci_high"]),
        "cost": cost.get(s), "dominated": beaten.get(s) is not None,
        "dominated_by": label(beaten[s]) if beaten.get(s) else None,
    } for s in rows.index], columns=["strategy", "label", "settings", "value", "ci_low", "ci_high", "cost",
                                    "dominated", "dominated_by"])
    numbers = {"Query p50 (ms)": "p50_ms", "Query p95 (ms)": "p95_ms", "Index build (s)": "index_build_s",
               "Embedded per s": "items_per_s", "Index (MB)": "index_bytes", "Chunks per doc": "chunks_per_doc"}
    table = pd.DataFrame([{
        "Strategy": label(s), metric_label(metric, k): quality[s],
        **{column: _number(costs.get(s, {}).get(key), 1e6 if key == "index_bytes" else 1.0)
           for column, key in numbers.items()},
        "Dominated by": label(beaten[s]) if beaten.get(s) else "", "What it is": settings_text(run, s),
    } for s in rows.index])
    return QualityCost(metric, k, axis, points, table, axes)


def _number(value: Any, scale: float = 1.0) -> float:
    """A figure for the table: NaN (an empty cell) where it does not apply."""
    return float(value) / scale if value is not None else float("nan")


def cheapest_not_worse(run: RunRecord, rows: pd.DataFrame, metric: str, k: int, tested: dict[tuple[str, str], Any],
                       costs: dict[str, dict[str, Any]]) -> Sentence | None:
    """"The cheapest strategy not significantly worse than the best": the best, and among the strategies
    the page's paired test cannot tell from it, the one of lowest query latency (p50), with both
    figures; None when the best is that one, or the run has no latency to weigh by."""
    if len(rows) < 2:
        return None
    best = best_row(rows, metric)["strategy"]
    candidates = [best] + [s for s in rows["strategy"] if s != best and (best, s) in tested
                           and not tested[(best, s)].significant]
    priced = [s for s in candidates if costs.get(s, {}).get(RECOMMENDATION_AXIS) is not None]
    if best not in priced or len(priced) < 2:
        return None
    cheapest = min(priced, key=lambda s: (costs[s][RECOMMENDATION_AXIS], s != best))
    if cheapest == best:
        return None
    d = tested[(best, cheapest)]
    name = metric_label(metric, k)
    size = ""
    if costs[cheapest].get("index_bytes") is not None and costs[best].get("index_bytes") is not None:
        size = (f", index {costs[cheapest]['index_bytes'] / 1e6:.1f} MB against "
                f"{costs[best]['index_bytes'] / 1e6:.1f} MB")
    return Sentence(
        f"Cheapest not significantly worse than {label(best)}: {label(cheapest)} ({settings_text(run, cheapest)}), "
        f"{d.diff:.3f} {name} behind it ({figures_text(d)}), at {costs[cheapest][RECOMMENDATION_AXIS]:.1f} ms "
        f"a query (median) against {costs[best][RECOMMENDATION_AXIS]:.1f} ms{size}.", "info")


def cost_recommendation(store: Store, run: RunRecord, rows: pd.DataFrame, metric: str, k: int,
                        latency: list[dict[str, Any]], tested: dict[tuple[str, str], Any]) -> list[Sentence]:
    """``cheapest_not_worse`` with the page's own paired tests (``tested``) and the run's costs;
    nothing for a run without cost figures."""
    if not (run.stats or {}).get("costs") or len(rows) < 2:
        return []
    costs = {r["strategy"]: r for r in cost_rows(store, run, latency)}
    found = cheapest_not_worse(run, rows, metric, k, tested, costs)
    return [found] if found is not None else []
