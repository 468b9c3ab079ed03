"""A stored run's top-k lists with each result's grade or hole, and the inputs the rule for
comparisons over judgments with holes reads (engine/statistics/holes.py): each strategy's judged
share per query, and the metric on two condensed lists.

A hole is a result with no grade: never judged, a failed judgment, or what the qrels mark as
pooled but not judged (as engine/store/holes.py counts them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from searchgrade.engine.metrics import compute_metrics
from searchgrade.engine.statistics.holes import condensed_lists, judges_what_it_saw
from searchgrade.engine.store import RunRecord, Store


def rule_applies(store: Store, run: RunRecord) -> bool:
    """``RunLabels(store, run, k).rule_applies`` without reading the run's lists and grades: whether
    its grading judges what it saw (engine/statistics/holes.py)."""
    marks_holes = any(store.pooled_unjudged(run.run_id).values())
    return judges_what_it_saw(run.label_source or "", marks_holes)


class RunLabels:
    """A run's top k per strategy and query, each result's grade (None: a hole), read once."""

    def __init__(self, store: Store, run: RunRecord, k: int) -> None:
        self.run, self.k = run, k
        self.lists = store.top_lists(run.run_id, k)
        holes = store.pooled_unjudged(run.run_id)
        #: The labels mark what they left unjudged (pooled but not judged).
        self.marks_holes = any(holes.values())
        self.grade: dict[tuple[str, str], int | None] = {}
        self.pool: dict[str, list[int]] = {}
        for g in store.grades(run.run_id):
            hole = g["grade"] is None or g["grade"] < 0 or g["doc_id"] in holes.get(g["query_id"], ())
            self.grade[(g["query_id"], g["doc_id"])] = None if hole else int(g["grade"])
            if not hole:
                self.pool.setdefault(g["query_id"], []).append(int(g["grade"]))
        top = run.grade_max if run.grade_max is not None else max([1, *(max(p) for p in self.pool.values() if p)])
        self.max_grade = max(int(top), 1)

    @property
    def rule_applies(self) -> bool:
        """Whether the grading judges what it saw (engine/statistics/holes.py)."""
        return judges_what_it_saw(self.run.label_source or "", self.marks_holes)

    def grades(self, strategy: str, query_id: str) -> list[int | None]:
        return [self.grade.get((query_id, d)) for d in self.lists.get(strategy, {}).get(query_id, [])]

    def judged(self, strategy: str, query_id: str) -> float:
        """The share of the k places of a top k holding a judged result (a missing place: not judged)."""
        return sum(g is not None for g in self.grades(strategy, query_id)) / self.k

    def value(self, grades: Sequence[int | None], query_id: str, metric: str) -> float:
        return compute_metrics(grades, self.pool.get(query_id, []), self.k, self.run.threshold, [metric],
                               max_grade=self.max_grade)[metric]


def condensed_values(a: RunLabels, strategy_a: str, b: RunLabels, strategy_b: str,
                     queries: Sequence[tuple[str, str]], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The metric at k of the two sides' condensed lists (engine/statistics/holes.py) per query pair
    (query id in a, query id in b); a query where either side has no judged result is left out. For
    the same run twice, the two strategies of one run."""
    values_a, values_b = [], []
    for qa, qb in queries:
        ca, cb = condensed_lists(a.grades(strategy_a, qa), b.grades(strategy_b, qb), a.k)
        if ca:
            values_a.append(a.value(ca, qa, metric))
            values_b.append(b.value(cb, qb, metric))
    return np.array(values_a, dtype=float), np.array(values_b, dtype=float)
