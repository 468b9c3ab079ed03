"""Held-out figures of a trained reranker: each base strategy vs the same strategy reranked.

Pure: takes the base strategies' ranked candidates, the cross-encoder's scores of (query,
document), the blend weight of the model that scored each query, and the judgments, and returns
per-strategy means with paired differences from the one procedure (engine/statistics/paired.py):
per metric, the strategies compared form one family, so each interval is adjusted for their number
and a figure is significant exactly when its interval excludes 0. The reranked list is what the reranked strategy returns:
the base's top ``depth`` ordered by the blended score (indexes.rerank.trained.blend), ties in
base order. ``fit_blend_weight`` picks a model's weight on queries it did not train on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from searchgrade.engine.metrics import compute_metrics
from searchgrade.indexes.rerank.trained import blend

#: Blend weights tried by fit_blend_weight, from the cross-encoder alone to the base order (None).
BLEND_GRID: tuple[float | None, ...] = (0.0, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, None)


def rerank(ranked: Sequence[str], scores: Mapping[str, float], depth: int, k: int,
           weight: float | None = 0.0) -> list[str]:
    """The top k of ``ranked[:max(depth, k)]`` by blended score, ties keeping the base order."""
    candidates = list(ranked[:max(depth, k)])
    values = blend([scores[d] for d in candidates], weight)
    order = np.argsort(-values, kind="stable")[:k]
    return [candidates[i] for i in order]


def fit_blend_weight(
    candidates: Mapping[str, Mapping[str, Sequence[str]]],
    scores: Mapping[str, Mapping[str, float]],
    judgments: Mapping[str, Mapping[str, int]],
    threshold: int,
    *,
    depth: int,
    k: int = 10,
    grid: Sequence[float | None] = BLEND_GRID,
) -> tuple[float | None, dict[str, float]]:
    """The weight of the grid with the best mean NDCG@k over every strategy and scored query.

    Ties go to the later weight of the grid (closer to the base order: the cautious choice).
    Returns the weight and the mean NDCG@k of each weight tried ("base" for None).
    """
    means: dict[str, float] = {}
    best, best_value = grid[-1], -1.0
    for weight in grid:
        values = []
        for lists in candidates.values():
            for qid, ranked in lists.items():
                if qid not in scores:
                    continue
                judged = judgments.get(qid, {})
                top = rerank(ranked, scores[qid], depth, k, weight)
                values.append(compute_metrics([judged.get(d) for d in top], list(judged.values()), k,
                                              threshold, ["ndcg"])["ndcg"])
        value = float(np.mean(values)) if values else 0.0
        means["base" if weight is None else f"{weight:g}"] = value
        if value >= best_value - 1e-12:
            best, best_value = weight, value
    return best, means


@dataclass(frozen=True)
class HeldOutFigure:
    """One base strategy vs the same strategy reranked, over the same queries."""

    strategy: str
    metric: str
    k: int
    n: int
    base: float
    reranked: float
    diff: float
    #: The paired bootstrap interval of diff at level 1 - 0.05/m (m: strategies on this metric).
    ci_low: float
    ci_high: float
    #: Two-sided, adjusted for the m comparisons, from the same resamples as the interval.
    p_value: float
    #: Comparisons in the family the interval and p-value are adjusted for.
    m: int
    improved: int
    hurt: int
    #: Share of the reranked top k that holds a grade (1.0 with complete labels).
    judged_reranked: float

    @property
    def significant(self) -> bool:
        """The adjusted interval excludes 0 (equivalently, p_value < 0.05)."""
        return bool(self.ci_low > 0 or self.ci_high < 0)

    def to_json(self) -> dict[str, object]:
        return {**self.__dict__, "significant": self.significant}


def heldout_figures(
    candidates: Mapping[str, Mapping[str, Sequence[str]]],
    scores: Mapping[str, Mapping[str, float]],
    judgments: Mapping[str, Mapping[str, int]],
    threshold: int,
    *,
    depth: int,
    k: int = 10,
    weights: Mapping[str, float | None] | None = None,
    metrics: Sequence[str] = ("ndcg", "dcg"),
    n_resamples: int = 10_000,
    seed: int = 0,
) -> tuple[list[HeldOutFigure], dict[str, dict[str, dict[str, float]]]]:
    """Per base strategy and metric: base vs reranked means, and their paired difference over the
    queries with its interval and p-value adjusted over the strategies compared on that metric.

    Args:
        candidates: strategy -> query id -> ranked doc ids (at least max(depth, k) deep).
        scores: query id -> doc id -> cross-encoder score; only queries present here are
            evaluated (the held-out ones), and every candidate in the top ``depth`` must have one.
        weights: query id -> the blend weight of the model that scored it (default 0: the
            cross-encoder alone).
        judgments: query id -> doc id -> grade (unjudged counts as 0).

    Returns:
        The figures, and per_query[strategy][query id] -> {"base:<metric>": v, "reranked:<metric>": v}.
    """
    from searchgrade.engine.statistics.paired import paired_differences

    measured: list[tuple[str, int, dict[str, list[float]], dict[str, list[float]], float]] = []
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    for strategy, lists in candidates.items():
        query_ids = sorted(q for q in lists if q in scores)
        if not query_ids:
            continue
        base_values = {m: [] for m in metrics}
        new_values = {m: [] for m in metrics}
        judged = []
        rows = per_query.setdefault(strategy, {})
        for qid in query_ids:
            judged_q = judgments.get(qid, {})
            pool = list(judged_q.values())
            base_top = list(lists[qid][:k])
            weight = weights.get(qid, 0.0) if weights is not None else 0.0
            new_top = rerank(lists[qid], scores[qid], depth, k, weight)
            base_grades = [judged_q.get(d) for d in base_top]
            new_grades = [judged_q.get(d) for d in new_top]
            b = compute_metrics(base_grades, pool, k, threshold, [*metrics, "judged"])
            r = compute_metrics(new_grades, pool, k, threshold, [*metrics, "judged"])
            row = rows.setdefault(qid, {})
            for m in metrics:
                base_values[m].append(b[m])
                new_values[m].append(r[m])
                row[f"base:{m}"], row[f"reranked:{m}"] = b[m], r[m]
            judged.append(r["judged"])
        measured.append((strategy, len(query_ids), base_values, new_values, float(np.mean(judged))))
    # Per metric, the strategies compared are one family: each interval is adjusted for their number.
    tests = {metric: paired_differences([(np.array(new[metric]), np.array(base[metric]))
                                         for _, _, base, new, _ in measured],
                                        n_resamples=n_resamples, seed=seed) if measured else []
             for metric in metrics}
    figures: list[HeldOutFigure] = []
    for i, (strategy, n, base, new, judged) in enumerate(measured):
        for metric in metrics:
            test = tests[metric][i]
            diff = np.array(new[metric]) - np.array(base[metric])
            figures.append(HeldOutFigure(
                strategy, metric, k, n, float(np.mean(base[metric])), float(np.mean(new[metric])),
                test.diff, test.ci_low, test.ci_high, test.p_value, test.m,
                int((diff > 1e-12).sum()), int((diff < -1e-12).sum()), judged,
            ))
    return figures, per_query
