"""Paired significance tests between strategies, and baseline vs reranker, said in words."""

from __future__ import annotations

import pandas as pd

from bench.dashboard_baseline.common import (
    ALPHA,
    PAIRED_RESAMPLES,
    WITH,
    WITHOUT,
    Sentence,
    metric_label,
    metric_rows,
)
from bench.dashboard_baseline.recompute import per_query_values, summary
from bench.dashboard_baseline.statistics import paired_test
from searchgrade.engine.run.strategies import base_strategies, label, reranked_of
from searchgrade.engine.store import RunRecord, Store


def verdict(p_value: float) -> str:
    """"significant" below ALPHA, else "not distinguishable"."""
    return "significant" if p_value < ALPHA else "not distinguishable"


def format_p(p_value: float) -> str:
    """ "p < 0.001", "p = 0.042"."""
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.3f}"


def significance(store: Store, run: RunRecord, metric: str, k: int,
                 rows: pd.DataFrame | None = None) -> list[Sentence]:
    """The best strategy against every other one, each said in words with its paired test."""
    rows = rows if rows is not None else metric_rows(summary(store, run, k), metric)
    if len(rows) < 2:
        return [Sentence("Only one strategy was evaluated: nothing to compare.")]
    values = per_query_values(store, run, metric, k)
    wide = values.pivot(index="query_id", columns="strategy", values="value")
    best = rows.loc[rows["value"].idxmax(), "strategy"]
    name = metric_label(metric, k)
    out = []
    for other in rows["strategy"]:
        if other == best or other not in wide:
            continue
        pair = wide[[best, other]].dropna()
        test = paired_test(pair[best].to_numpy(), pair[other].to_numpy(),
                           n_resamples=PAIRED_RESAMPLES, seed=0)
        gap = f"{test.diff:+.3f} {name} (95% CI {test.ci_low:+.3f} to {test.ci_high:+.3f}, {format_p(test.p_value)}, {test.n} queries)"
        if test.p_value < ALPHA:
            out.append(Sentence(f"{label(best)} beats {label(other)} by {gap}: "
                                "a real difference.", "good", other))
        else:
            out.append(Sentence(f"{label(best)} and {label(other)} are not "
                                f"distinguishable: {gap}; the gap could be noise.", "info", other))
    return out


def reranker_tests(store: Store, run: RunRecord, metric: str, k: int) -> pd.DataFrame:
    """Baseline vs reranker per retrieval strategy, with a paired test over the same queries."""
    values = per_query_values(store, run, metric, k)
    wide = values.pivot(index="query_id", columns="strategy", values="value")
    out = []
    for base in base_strategies():
        reranked = reranked_of(base)
        if reranked is None or base not in wide or reranked not in wide:
            continue
        pair = wide[[reranked, base]].dropna()
        if pair.empty:
            continue
        test = paired_test(pair[reranked].to_numpy(), pair[base].to_numpy(),
                           n_resamples=PAIRED_RESAMPLES, seed=0)
        diff = pair[reranked] - pair[base]
        out.append({
            "Strategy": label(base), "strategy": base,
            WITHOUT: float(pair[base].mean()), WITH: float(pair[reranked].mean()),
            "Change": test.diff, "CI low": test.ci_low, "CI high": test.ci_high,
            "p-value": test.p_value, "Verdict": verdict(test.p_value),
            "Queries improved": int((diff > 1e-12).sum()), "Queries hurt": int((diff < -1e-12).sum()),
            "Unchanged": int((diff.abs() <= 1e-12).sum()),
        })
    return pd.DataFrame(out, columns=["Strategy", "strategy", WITHOUT, WITH, "Change", "CI low",
                                      "CI high", "p-value", "Verdict", "Queries improved",
                                      "Queries hurt", "Unchanged"])
