"""A stored run's metric values at any cut-off up to its depth: read where the run stored them,
else recomputed from its stored results and grades (never by searching or judging again).

A recomputation reads every ranking's top k with its grades in one query and computes every
metric for all rankings at once (engine.metrics.arrays: the same values as the pipeline's
per-query scoring, engine/run/scoring.py, to the last bit). The gate (engine/gate.py) pairs these
values; the dashboard's figures (viewmodels/recompute.py) add their confidence intervals.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics import METRIC_NAMES, RankedGrades, metric_arrays, metric_key, metric_record
from searchgrade.engine.metrics.arrays_holes import Holes
from searchgrade.engine.run.scoring import SOURCE_FOUND
from searchgrade.engine.run.strategies import strategy_order
from searchgrade.engine.store import RunRecord, Store


def check_cutoff(run: RunRecord, k: int) -> None:
    """A cut-off the run can show: 1 up to the results it kept per query."""
    if not 1 <= k <= run.depth:
        raise SearchGradeError(
            f"k of {k} is outside 1..{run.depth}: run {run.run_id} kept {run.depth} results per "
            "query; pick a k up to that"
        )


class Recomputed:
    """Metrics of every ranking of a run at one cut-off, computed from its stored grades.

    ``values[metric]`` is a (strategies, queries) array, strategies in display order and queries
    in id order; NaN where a ranking has no value (mean relevance when every top-k judgment
    failed; source found for a query without a source document). A metric that does not apply to
    the run (infAP without sampled qrels) has no entry.
    """

    def __init__(self, store: Store, run: RunRecord, metrics: Sequence[str], k: int):
        if any(metric_record(m).needs_sampling for m in metrics) and not store.records_sampling(run.run_id):
            metrics = [m for m in metrics if not metric_record(m).needs_sampling]
        # The metrics whose array forms read the rankings' holes (engine.metrics.arrays_holes).
        holes_asked = any(metric_record(m).holes for m in metrics)
        # The condensed list moves judged results from below k up: it reads every stored result.
        deep = run.depth if any(metric_key(m).name == "ndcg_judged" for m in metrics if m != SOURCE_FOUND) \
            and run.depth > k else k
        ranked = store.ranked_grades(run.run_id, deep)
        self.strategies = strategy_order(ranked.strategies)
        self.query_ids = ranked.query_ids
        n_strategies, n_queries = len(self.strategies), len(self.query_ids)
        rows = ranked.rows
        # Ranking row of each result: its strategy's place in display order, then its query.
        place = np.array([self.strategies.index(s) for s in ranked.strategies], dtype=np.int64)
        row = (place[rows["si"]] * n_queries + rows["qi"]) if n_strategies else np.empty(0, np.int64)
        shape = (n_strategies * n_queries, deep)
        grade = np.zeros(shape, dtype=np.int64)
        present, known, failed = (np.zeros(shape, dtype=bool) for _ in range(3))
        grade[row, rows["pos"]] = rows["grade"]
        present[row, rows["pos"]] = True
        known[row, rows["pos"]] = rows["known"]
        failed[row, rows["pos"]] = rows["failed"]
        holes = None
        if holes_asked:
            hole = grade < 0
            found = store.ranked_holes(run.run_id, deep)
            if len(found["pos"]):
                hole_row = place[found["si"]] * n_queries + found["qi"]
                hole[hole_row, found["pos"]] = True
        if deep > k:
            deep_grade, deep_present, deep_known = grade, present, known
            grade, present, known, failed = grade[:, :k], present[:, :k], known[:, :k], failed[:, :k]
            rows = {name: values[rows["pos"] < k] for name, values in rows.items()}
            row = row[ranked.rows["pos"] < k] if n_strategies else row
        else:
            deep_grade, deep_present, deep_known = grade, present, known
        pool = store.pool_grades(run.run_id)
        pool_values = np.unique(pool["grade"][pool["grade"] > 0])[::-1]
        counts = np.zeros((n_queries, len(pool_values)), dtype=np.int64)
        for j, value in enumerate(pool_values):
            counts[:, j] = np.bincount(pool["qi"][pool["grade"] == value], minlength=n_queries)
        relevant = np.bincount(pool["qi"][pool["grade"] >= run.threshold], minlength=n_queries)
        query_of = np.tile(np.arange(n_queries), n_strategies)
        if holes_asked:
            top = run.grade_max if run.grade_max is not None else max([1, *pool["grade"].tolist()])
            holes = Holes(deep_grade, deep_present, deep_known, hole,
                          store.pool_nonrelevant(run.run_id, run.threshold)[query_of], max(int(top), 1))
        arrays = metric_arrays(RankedGrades(grade, present, known, failed, pool_values, counts[query_of],
                                            relevant[query_of], holes),
                               k, run.threshold, [m for m in metrics if m != SOURCE_FOUND])
        self.values = {m: v.reshape(n_strategies, n_queries) for m, v in arrays.items()}
        if SOURCE_FOUND in metrics and ranked.has_source.any():
            found = np.bincount(row, weights=rows["is_source"], minlength=shape[0]) > 0
            self.values[SOURCE_FOUND] = np.where(ranked.has_source, found.reshape(n_strategies, n_queries),
                                                 np.nan)
        # A query a strategy failed on (a backend error, stored in failed_queries) has no value for
        # that strategy: not the metrics of an empty ranking.
        self.failed = np.zeros((n_strategies, n_queries), dtype=bool)
        place_of = {s: i for i, s in enumerate(self.strategies)}
        query_of_id = {q: i for i, q in enumerate(self.query_ids)}
        for r in store.failed_queries(run.run_id):
            if r["strategy"] in place_of and r["query_id"] in query_of_id:
                self.failed[place_of[r["strategy"]], query_of_id[r["query_id"]]] = True
        if self.failed.any():
            for values in self.values.values():
                values[self.failed] = np.nan

    def frame(self, metrics: Sequence[str]) -> pd.DataFrame:
        """Long form: strategy, query_id, then one column per metric."""
        n = len(self.query_ids)
        frame = pd.DataFrame({"strategy": np.repeat(np.array(self.strategies, dtype=object), n),
                              "query_id": np.tile(np.array(self.query_ids, dtype=object), len(self.strategies))})
        for metric in metrics:
            frame[metric] = self.values[metric].ravel() if metric in self.values else np.nan
        if self.failed.any():  # failed (strategy, query) rows are left out, as the stored rows leave them out
            frame = frame[~self.failed.ravel()].reset_index(drop=True)
        return frame

    def per_query(self, metric: str) -> pd.DataFrame:
        """One metric per strategy and query: columns strategy, query_id, value (queries without
        a value left out, as the stored rows leave them out)."""
        if metric not in self.values:
            return pd.DataFrame(columns=["strategy", "query_id", "value"])
        frame = self.frame([metric]).rename(columns={metric: "value"})
        return frame if metric != SOURCE_FOUND else frame.dropna(subset=["value"]).reset_index(drop=True)


def per_query_values(store: Store, run: RunRecord, metric: str, k: int) -> pd.DataFrame:
    """One metric per strategy and query: columns strategy, query_id, value (read where the run
    stored cut-off k, else recomputed; queries without a value left out)."""
    check_cutoff(run, k)
    stored = metric == SOURCE_FOUND or metric in METRIC_NAMES  # not "rbp(p=0.9)": never stored
    if stored and k in store.stored_cutoffs(run.run_id):
        return store.metric_frame(run.run_id, metric, k)
    return Recomputed(store, run, [*METRIC_NAMES, SOURCE_FOUND] if stored else [metric], k).per_query(metric)


def recompute_values(store: Store, run: RunRecord, metrics: Sequence[str], k: int) -> pd.DataFrame:
    """Metrics at cut-off k recomputed from the stored results and grades: one row per strategy and query.

    Counted as the pipeline counts them: a failed judgment (grade NULL) is 0 in the rank metrics
    and left out of mean relevance and the relevance distribution (NaN where every top-k result
    failed); a query a strategy returned nothing for gets the metrics of an empty ranking, and a
    query it failed on (a backend error, in failed_queries) has no row for it.
    Rows: strategies in display order, each over the run's queries in id order.
    """
    check_cutoff(run, k)
    return Recomputed(store, run, metrics, k).frame(metrics)


def wide_values(store: Store, run: RunRecord, metric: str, k: int,
                recomputed: Recomputed | None = None) -> pd.DataFrame:
    """One metric as one column per strategy (by name), one row per query (indexed by id, in id
    order), NaN where a strategy has no value: read where the run stored cut-off k, else
    recomputed (``recomputed``: one already made at k, whose metrics are reused)."""
    check_cutoff(run, k)
    if (metric == SOURCE_FOUND or metric in METRIC_NAMES) and k in store.stored_cutoffs(run.run_id):
        strategies, query_ids, matrix = store.metric_matrix(run.run_id, metric, k)
        return pd.DataFrame(matrix, index=pd.Index(query_ids, name="query_id"),
                            columns=pd.Index(strategies, name="strategy"))
    recomputed = recomputed if recomputed is not None and metric in recomputed.values \
        else Recomputed(store, run, [metric], k)
    values = recomputed.values.get(metric)
    if values is None:
        return pd.DataFrame()
    wide = pd.DataFrame(values.T, index=pd.Index(recomputed.query_ids, name="query_id"),
                        columns=pd.Index(recomputed.strategies, name="strategy"))
    return wide.dropna(how="all")


def ideal_dcg_values(store: Store, run: RunRecord, k: int) -> np.ndarray:
    """Each query's ideal DCG@k (its known grades in decreasing order, engine.metrics.dcg.ideal_dcg),
    in query id order: what a DCG@k reads against."""
    from searchgrade.engine.metrics.dcg import ideal_dcg

    pool = store.pool_grades(run.run_id)
    n = store.query_count(run.run_id)
    grades: list[list[int]] = [[] for _ in range(n)]
    for qi, grade in zip(pool["qi"].tolist(), pool["grade"].tolist(), strict=True):
        grades[qi].append(grade)
    return np.array([ideal_dcg(g, k) for g in grades], dtype=float)
