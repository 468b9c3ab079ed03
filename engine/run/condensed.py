"""A stored run's top-k lists with each result's grade or hole, and the inputs the rule for
comparisons over judgments with holes reads (engine/statistics/holes.py): each strategy's judged
share per query, and the metric on two condensed lists.

A hole is a result with no grade: never judged, a failed judgment, or what the qrels mark as
pooled but not judged (as engine/store/holes.py counts them).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from searchgrade.engine.metrics import compute_metrics
from searchgrade.engine.statistics.holes import (
    HoleVerdict,
    Sides,
    compare_with_holes,
    condensed_lists,
    judges_what_it_saw,
)
from searchgrade.engine.store import RunRecord, Store

if TYPE_CHECKING:
    from searchgrade.engine.statistics.pairing import PairedRuns


class RunLabels:
    """A run's top k per strategy and query, each result's grade (None: a hole), read once."""

    def __init__(self, store: Store, run: RunRecord, k: int) -> None:
        self.run, self.k = run, k
        self.lists = store.top_lists(run.run_id, k)
        holes = store.pooled_unjudged(run.run_id)
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
        return judges_what_it_saw(self.run.label_source or "", [g for p in self.pool.values() for g in p],
                                  self.run.threshold)

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


@dataclass(frozen=True)
class Item:
    """One comparison: side a (strategy_a of run a) against side b, over query pairs (a's id, b's
    id), with each side's metric per query pair (holes as not relevant)."""

    strategy_a: str
    strategy_b: str
    queries: Sequence[tuple[str, str]]
    a: np.ndarray
    b: np.ndarray


def holes_verdicts(labels_a: RunLabels, labels_b: RunLabels, items: Sequence[Item], metric: str, *,
                   keys: Sequence[Hashable], reasons: Sequence[Callable[[float, float], str]],
                   alpha: float | None = None) -> list[HoleVerdict] | None:
    """Each comparison by the rule of engine/statistics/holes.py (a strategy of run a against one of
    run b: the same run twice within a run); None when neither run's grading judges what it saw."""
    if not (labels_a.rule_applies or labels_b.rule_applies):
        return None
    sides = []
    for item in items:
        ja = np.array([labels_a.judged(item.strategy_a, qa) for qa, _ in item.queries])
        jb = np.array([labels_b.judged(item.strategy_b, qb) for _, qb in item.queries])
        sides.append(Sides(item.a, item.b, ja, jb, lambda item=item: condensed_values(
            labels_a, item.strategy_a, labels_b, item.strategy_b, item.queries, metric)))
    return compare_with_holes(sides, reasons, keys=keys, **({"alpha": alpha} if alpha is not None else {}))


def run_changes(store: Store, a: RunRecord, b: RunRecord, metric: str, k: int, paired: PairedRuns,
                pairs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], family: Sequence[str],
                alpha: float) -> list[HoleVerdict] | None:
    """Each strategy's change from run A to run B by the rule for judgments with holes: side a is
    run B (after), side b run A (before), over the paired queries (``pairs``: rows, A's values, B's
    values); None where neither run's grading judges what it saw, or the metric reads no holes."""
    from searchgrade.engine.run.strategies import label
    from searchgrade.engine.statistics.holes import rule_metric, withheld_reason

    if not rule_metric(metric):
        return None
    after, before = RunLabels(store, b, k), RunLabels(store, a, k)
    ids_b = paired.query_ids_b if paired.query_ids_b is not None else paired.query_ids
    items = [Item(s, s, [(ids_b[r], paired.query_ids[r]) for r in pairs[s][0]], pairs[s][2], pairs[s][1])
             for s in family]
    reasons = [lambda j_b, j_a, s=s: withheld_reason(f"{label(s)} in run B", f"{label(s)} in run A", j_b, j_a, k)
               for s in family]
    return holes_verdicts(after, before, items, metric, keys=list(family), reasons=reasons, alpha=alpha)
