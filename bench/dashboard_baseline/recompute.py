"""Metric values at any cut-off: read when the run stored them, else recomputed from its stored
results and grades with the pipeline's own scoring (never by searching or judging again)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from bench.dashboard_baseline.common import RECOMPUTE_RESAMPLES, check_cutoff, stored_cutoffs
from bench.dashboard_baseline.statistics import bootstrap_ci
from searchgrade.core.records import ScoredDoc, SearchHits
from searchgrade.engine.metrics import METRIC_NAMES
from searchgrade.engine.run.scoring import SOURCE_FOUND, per_query_metrics
from searchgrade.engine.run.strategies import strategy_order
from searchgrade.engine.store import RunRecord, Store


def per_query_values(store: Store, run: RunRecord, metric: str, k: int) -> pd.DataFrame:
    """One metric per strategy and query: columns strategy, query_id, value."""
    check_cutoff(run, k)
    rows = store.metric_values(run.run_id, metric, k)
    if rows or k in stored_cutoffs(store, run.run_id):
        return pd.DataFrame(rows, columns=["strategy", "query_id", "metric", "k", "value"])[
            ["strategy", "query_id", "value"]]
    if metric == SOURCE_FOUND:
        return pd.DataFrame(store.source_found_values(run.run_id, k),
                            columns=["strategy", "query_id", "value"])
    return recompute_values(store, run, [metric], k)[["strategy", "query_id", metric]].rename(
        columns={metric: "value"})


def recompute_values(store: Store, run: RunRecord, metrics: Sequence[str], k: int) -> pd.DataFrame:
    """Metrics at cut-off k recomputed from the stored results and grades: one row per strategy and query.

    The pipeline's own per-query function does it, so a failed judgment (grade NULL) counts as
    the stored metrics count it: 0 in the rank metrics, left out of mean relevance and the
    relevance distribution (NaN where every top-k result failed). A query a strategy returned
    nothing for gets the metrics of an empty ranking.
    """
    check_cutoff(run, k)
    judgments: dict[str, dict[str, int]] = {}
    failed: dict[str, set[str]] = {}
    for g in store.grades(run.run_id):
        if g["grade"] is None:
            failed.setdefault(g["query_id"], set()).add(g["doc_id"])
        else:
            judgments.setdefault(g["query_id"], {})[g["doc_id"]] = g["grade"]
    ranked = {(r["strategy"], r["query_id"]): r["doc_ids"] for r in store.ranked_doc_ids(run.run_id, k)}
    query_ids = [q["query_id"] for q in store.queries(run.run_id)]
    hits = {
        strategy: [SearchHits([ScoredDoc(d, 0.0, rank) for rank, d in enumerate(ranked.get((strategy, q), []), 1)],
                              0.0) for q in query_ids]
        for strategy in strategy_order(store.result_strategies(run.run_id))
    }
    wanted = set(metrics)
    values: dict[tuple[str, str], dict[str, float]] = {}
    for strategy, qid, metric, _k, value in per_query_metrics(hits, query_ids, judgments, run.threshold,
                                                               [k], failed=failed):
        if metric in wanted:
            values.setdefault((strategy, qid), {})[metric] = value
    rows = [{"strategy": strategy, "query_id": qid, **values.get((strategy, qid), {})}
            for strategy in hits for qid in query_ids]
    return pd.DataFrame(rows, columns=["strategy", "query_id", *metrics])


def summary(store: Store, run: RunRecord, k: int) -> pd.DataFrame:
    """Every metric per strategy at cut-off k with its 95% CI: strategy, metric, value, ci_low, ci_high, n.

    Stored summaries are read; a cut-off the run did not store is recomputed from stored grades.
    """
    check_cutoff(run, k)
    columns = ["strategy", "metric", "value", "ci_low", "ci_high", "n"]
    rows = store.metric_summary(run.run_id, k)
    if rows:
        return pd.DataFrame(rows)[columns]
    values = recompute_values(store, run, METRIC_NAMES, k)
    found = pd.DataFrame(store.source_found_values(run.run_id, k), columns=["strategy", "query_id", "value"])
    if not found.empty:
        values = values.merge(found.rename(columns={"value": SOURCE_FOUND}), how="left",
                              on=["strategy", "query_id"])
    out = []
    for strategy, group in values.groupby("strategy", sort=False):
        for metric in [m for m in values.columns if m not in ("strategy", "query_id")]:
            # Left out where a query has no value (every judgment failed; no source document).
            column = group[metric].dropna().to_numpy(dtype=float)
            if len(column) == 0:
                continue
            ci = bootstrap_ci(column, n_resamples=RECOMPUTE_RESAMPLES, seed=0)
            out.append((strategy, metric, ci.mean, ci.low, ci.high, len(column)))
    return pd.DataFrame(out, columns=columns)
