"""The Compare screen: run B against run A per strategy, paired over their shared queries."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from bench.dashboard_baseline.common import PAIRED_RESAMPLES, PRIMARY_K, PRIMARY_METRIC
from bench.dashboard_baseline.drilldown import query_choices
from bench.dashboard_baseline.recompute import per_query_values
from bench.dashboard_baseline.significance import verdict
from bench.dashboard_baseline.statistics import paired_test
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import RunRecord, Store


@dataclass
class RunComparison:
    run_a: RunRecord
    run_b: RunRecord
    metric: str
    k: int
    n_shared: int
    #: Strategy, Run A, Run B, Change, CI low, CI high, p-value, Verdict, Queries
    deltas: pd.DataFrame
    #: strategy label, query id, text, Run A, Run B, Change (largest |change| first)
    changed: pd.DataFrame
    notes: list[str]


def compare_runs(store: Store, run_a: str, run_b: str, metric: str = PRIMARY_METRIC,
                 k: int = PRIMARY_K, n_changed: int = 20) -> RunComparison:
    """Run B against run A per strategy, paired over the queries (by id) both evaluated."""
    a, b = store.get_run(run_a), store.get_run(run_b)
    notes = []
    for run in (a, b):
        if k > run.depth:
            raise SearchGradeError(f"k of {k} is above the depth of run {run.run_id} ({run.depth}); "
                                   "pick a k both runs kept")
    if a.collection_name != b.collection_name:
        notes.append(f"The runs evaluate different collections ({a.collection_name}, "
                     f"{b.collection_name}): only queries with the same id are paired.")
    rows = store.paired_metric_values(a.run_id, b.run_id, metric, k)
    frame = pd.DataFrame(rows, columns=["strategy", "query_id", "text", "value_a", "value_b"])
    if frame.empty:
        values_a = per_query_values(store, a, metric, k)
        values_b = per_query_values(store, b, metric, k)
        texts = query_choices(store, a.run_id)[["query_id", "text"]]
        frame = values_a.merge(values_b, on=["strategy", "query_id"], suffixes=("_a", "_b")).merge(
            texts, on="query_id")
    deltas = []
    for strategy in strategy_order(frame["strategy"].unique().tolist()):
        pair = frame[frame["strategy"] == strategy]
        test = paired_test(pair["value_b"].to_numpy(), pair["value_a"].to_numpy(),
                           n_resamples=PAIRED_RESAMPLES, seed=0)
        deltas.append({"Strategy": label(strategy), "strategy": strategy,
                       "Run A": float(pair["value_a"].mean()), "Run B": float(pair["value_b"].mean()),
                       "Change": test.diff, "CI low": test.ci_low, "CI high": test.ci_high,
                       "p-value": test.p_value, "Verdict": verdict(test.p_value), "Queries": test.n})
    frame["Change"] = frame["value_b"] - frame["value_a"]
    changed = frame.reindex(frame["Change"].abs().sort_values(ascending=False, kind="stable").index)
    changed = changed[changed["Change"].abs() > 1e-12].head(n_changed)
    changed = pd.DataFrame({
        "Strategy": changed["strategy"].map(label), "Query id": changed["query_id"],
        "Query": changed["text"], "Run A": changed["value_a"], "Run B": changed["value_b"],
        "Change": changed["Change"],
    })
    n_shared = int(frame["query_id"].nunique())
    only = {len(store.queries(a.run_id)), len(store.queries(b.run_id))}
    if only != {n_shared}:
        notes.append(f"{n_shared} queries are in both runs; the others are left out of the paired tests.")
    return RunComparison(a, b, metric, k, n_shared, pd.DataFrame(deltas), changed, notes)
