"""Scoring a run: every metric per strategy, query and cut-off, and their means with 95% CIs.

A failed judgment (grade None) is never a grade. In the rank metrics (DCG, NDCG, precision,
recall, MRR, MAP) it counts as 0, like an unjudged document in qrels mode, and ``judged@k`` shows
the share of the top k that holds a grade; mean relevance and the relevance distribution
(the records with ``over_places``, engine/metrics/registry.py), which divide by the k places (a place no result holds counts 0, not
relevant), leave a failed judgment's place out: they divide by k minus the failed places (a query
whose k places all failed has no value for them); the pools (ideal DCG, recall denominators) hold
valid grades only.

The pipeline scores a run with these when it completes; the dashboard recomputes a cut-off the
run did not store with the same functions, so both count alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.core.records import Query, SearchHits
from searchgrade.engine.metrics import METRIC_NAMES, REGISTRY, SOURCE_FOUND, compute_metrics

#: Cut-offs stored for every run (those up to its depth), besides the run's own k.
STANDARD_CUTOFFS = (1, 3, 5, 10, 20, 50, 100)

#: Metrics over the k places whose grade is known (a failed judgment's place is left out, not
#: counted as 0; a place no result holds counts 0).
_OVER_PLACES = tuple(name for name in METRIC_NAMES if REGISTRY[name].over_places)

#: One per-query metric value: (strategy, query_id, metric, k, value).
MetricRow = tuple[str, str, str, int, float]


def stored_cutoffs(k: int, depth: int) -> list[int]:
    """The cut-offs a run stores: the standard ones up to its depth, its k and its depth."""
    return sorted({c for c in STANDARD_CUTOFFS if c <= depth} | {k, depth})


def records_sampling(judgments: dict[str, dict[str, int]], pooled_unjudged: dict[str, set[str]] | None) -> bool:
    """Whether judgments mark pooled documents as not judged (a negative grade): what infAP needs."""
    return any(pooled_unjudged.values()) if pooled_unjudged else any(
        g < 0 for judged in judgments.values() for g in judged.values())


def run_metric_names(judgments: dict[str, dict[str, int]],
                     pooled_unjudged: dict[str, set[str]] | None = None) -> tuple[str, ...]:
    """The metrics a run stores: every registered one, infAP only where the qrels record sampling."""
    sampled = records_sampling(judgments, pooled_unjudged)
    return tuple(m for m in METRIC_NAMES if not REGISTRY[m].needs_sampling or sampled)


def per_query_metrics(
    hits: dict[str, Sequence[SearchHits | None]],
    query_ids: Sequence[str],
    judgments: dict[str, dict[str, int]],
    threshold: int,
    cutoffs: Sequence[int],
    *,
    failed: dict[str, set[str]] | None = None,
    pooled_unjudged: dict[str, set[str]] | None = None,
    max_grade: int | None = None,
) -> list[tuple[str, str, str, int, float]]:
    """Every metric for every strategy, query and cut-off: rows (strategy, query, metric, k, value).

    A query a strategy failed on (hits entry None: a backend error) has no row for that strategy:
    it is left out of the strategy's metrics, never scored as an empty list.

    Unjudged documents have grade None (0 in the metrics; visible in `judged`). Documents in
    ``failed`` (query -> doc ids whose judgment failed) also count as 0 in the rank metrics, but
    their places are left out of mean relevance and the relevance distribution (which divide by
    k minus those places); a query whose k places all failed has no row for those.

    ``pooled_unjudged`` (query -> doc ids) are judgments the qrels mark as pooled but not judged (a
    negative grade, 0 in ``judgments``): not relevant in the standard metrics, holes in bpref, the
    condensed lists, infAP and the RBP residual (a failed or missing judgment is a hole too).
    ``max_grade`` is the grade scale's top grade (ERR); None takes the largest grade in
    ``judgments`` (at least 1). infAP has rows only where the judgments record sampling.
    """
    failed = failed or {}
    pooled = pooled_unjudged or {}
    names = run_metric_names(judgments, pooled)
    if max_grade is None:
        max_grade = max([1, *(g for judged in judgments.values() for g in judged.values())])
    rows: list[tuple[str, str, str, int, float]] = []
    for strategy, strategy_hits in hits.items():
        for qid, h in zip(query_ids, strategy_hits, strict=True):
            if h is None:
                continue
            judged = judgments.get(qid, {})
            if pooled.get(qid):
                # A negative grade: 0 for the standard metrics (first_k_grades), a hole for the rest.
                judged = {**judged, **dict.fromkeys(pooled[qid], -1)}
            grades = [judged.get(d.doc_id) for d in h.docs]
            pool = list(judged.values())
            failed_here = failed.get(qid, set())
            for k in cutoffs:
                values = compute_metrics(grades, pool, k, threshold, names, max_grade=max_grade)
                top = h.docs[:k]
                n_failed = sum(1 for d in top if d.doc_id in failed_here)
                if n_failed:
                    # A failed judgment's place is left out of the k places: the others (results
                    # with a grade, and places no result holds, as 0) are what is known.
                    graded = [judged.get(d.doc_id) for d in top if d.doc_id not in failed_here]
                    for name in _OVER_PLACES:
                        if n_failed < k:
                            values[name] = compute_metrics(graded, pool, k - n_failed, threshold, [name])[name]
                        else:
                            del values[name]
                for metric, value in values.items():
                    rows.append((strategy, qid, metric, k, float(value)))
    return rows


def source_found_metrics(
    hits: dict[str, Sequence[SearchHits | None]], queries: Sequence[Query], cutoffs: Sequence[int]
) -> list[tuple[str, str, str, int, float]]:
    """source_found@k: 1.0 if the query's source document is in the top k, else 0.0.

    Only for queries with a source document (generated ones); rows as in `per_query_metrics`.
    """
    rows: list[tuple[str, str, str, int, float]] = []
    for strategy, strategy_hits in hits.items():
        for query, h in zip(queries, strategy_hits, strict=True):
            if h is None or not query.source_doc_id:
                continue
            ranks = [d.rank for d in h.docs if d.doc_id == query.source_doc_id]
            for k in cutoffs:
                found = bool(ranks) and ranks[0] <= k
                rows.append((strategy, query.query_id, SOURCE_FOUND, k, 1.0 if found else 0.0))
    return rows


def summarise(
    rows: Sequence[tuple[str, str, str, int, float]], n_bootstrap: int, seed: int
) -> list[tuple[str, str, int, float, float, float, int]]:
    """Mean and 95% bootstrap CI per (strategy, metric, k): rows (strategy, metric, k, mean, lo, hi, n).

    One resample index matrix for the whole run (per number of values: a metric a query has no
    value for leaves a shorter column), shared by every strategy, metric and cut-off; each CI is
    the one ``bootstrap_ci(values, n_resamples=n_bootstrap, seed=seed)`` gives.
    """
    # numpy, imported here: the CLI reads SOURCE_FOUND from this module at start-up.
    from searchgrade.engine.statistics.bootstrap import bootstrap_cis

    groups: dict[tuple[str, str, int], list[float]] = {}
    for strategy, _qid, metric, k, value in rows:
        groups.setdefault((strategy, metric, k), []).append(value)
    intervals = bootstrap_cis(list(groups.values()), n_resamples=n_bootstrap, seed=seed)
    return [(strategy, metric, k, ci.mean, ci.low, ci.high, len(values))
            for ((strategy, metric, k), values), ci in zip(groups.items(), intervals, strict=True)]
