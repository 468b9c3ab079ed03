"""Every metric of many rankings at once: numpy twins of the per-query functions.

The dashboard recomputes a run at a cut-off the run did not store, over tens of thousands of
rankings. ``metric_arrays`` (engine/metrics/__init__.py) gives, with these kernels (each metric's
record names its own), ranking by ranking, what ``engine.run.scoring.per_query_metrics`` gives
(failed judgments included), with the same arithmetic in the same order: sums run rank by rank,
divisions are of the same integers, so the values are equal to the last bit, not only close.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import searchgrade.engine.metrics.arrays_holes as arrays_holes
from searchgrade.engine.metrics.arrays_holes import Holes
from searchgrade.engine.metrics.relevance import HIGHLY_RELEVANT


@dataclass
class RankedGrades:
    """The top k of many rankings, one row each, as (rankings, k) arrays, rank 1 first.

    Attributes:
        grade: The result's grade; 0 where none is known or no result holds the place.
        present: A result holds the place (a ranking may be shorter than k).
        known: The result has a grade (unjudged and failed results have none).
        failed: The result's judgment failed: 0 in the rank metrics; its place is left out of the
            k places mean relevance and the relevance distribution divide by.
        pool_values: The positive grades known anywhere, largest first (V of them).
        pool_counts: (rankings, V): how many of the query's known grades equal each of them (the
            ideal ranking of NDCG).
        pool_relevant: (rankings,): how many of the query's known grades reach the threshold (the
            denominator of recall and AP).
        holes: What the metrics for incomplete judgments read besides (engine.metrics.arrays_holes):
            None where none of them is asked for.
    """

    grade: np.ndarray
    present: np.ndarray
    known: np.ndarray
    failed: np.ndarray
    pool_values: np.ndarray
    pool_counts: np.ndarray
    pool_relevant: np.ndarray
    holes: Holes | None = None


def _discounted_gain(gains: np.ndarray) -> np.ndarray:
    """Row-wise sum of gains[:, i] / log2(i + 2), added rank by rank as dcg.discounted_gain does."""
    total = np.zeros(len(gains))
    for i in range(gains.shape[1]):
        total = total + gains[:, i] / math.log2(i + 2)
    return total


def _ideal_gains(r: RankedGrades, k: int) -> np.ndarray:
    """Per ranking, the k largest of its query's positive grades (0-padded), each grade value as
    many times as the pool or the top k holds it (ndcg's multiset union)."""
    top = np.stack([(r.present & (r.grade == v)).sum(axis=1) for v in r.pool_values], axis=1) \
        if len(r.pool_values) else np.zeros((len(r.grade), 0), dtype=np.int64)
    ends = np.cumsum(np.maximum(r.pool_counts, top), axis=1)
    gains = np.zeros((len(r.grade), k), dtype=np.int64)
    if not len(r.pool_values):
        return gains
    for i in range(k):
        # The grade at place i is the first value whose cumulative count passes i.
        beyond = ends > i
        gains[:, i] = np.where(beyond[:, -1], r.pool_values[beyond.argmax(axis=1)], 0)
    return gains


def _over_places(hits: np.ndarray, places: np.ndarray) -> np.ndarray:
    """hits / places; NaN where no place is left (every one of the k held a failed judgment)."""
    out = np.full(len(hits), np.nan)
    np.divide(hits, places, out=out, where=places > 0)
    return out


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0.0 where the denominator is 0."""
    return np.divide(numerator, denominator, out=np.zeros(len(numerator)), where=denominator > 0)


class TopK:
    """One cut-off's view of the rankings, and what several metrics share."""

    def __init__(self, r: RankedGrades, k: int, threshold: int):
        self.r, self.k, self.threshold = r, k, threshold
        # A negative grade (Cranfield's -1) is 0, as first_k_grades makes it: not relevant, no gain.
        self.grade = np.maximum(r.grade[:, :k], 0)
        self.present = r.present[:, :k]
        self.relevant = self.present & (self.grade >= threshold)
        self.hits = self.relevant.sum(axis=1)
        self.n_present = self.present.sum(axis=1)
        # What mean relevance and the distribution count: the k places, a failed judgment's left
        # out (a place no result holds is 0, not relevant).
        self.counted = self.present & ~r.failed[:, :k]
        self.places = k - (self.present & r.failed[:, :k]).sum(axis=1)
        self.dcg = _discounted_gain(self.grade)
        # Relevant documents known for the query (the top k's count if larger): recall and AP.
        self.total_relevant = np.maximum(r.pool_relevant, self.hits)

    def graded_share(self, hit: np.ndarray) -> np.ndarray:
        """#{counted places where hit} / places."""
        return _over_places((self.counted & hit).sum(axis=1), self.places)


def ndcg(t: TopK) -> np.ndarray:
    return _ratio(t.dcg, _discounted_gain(_ideal_gains(t.r, t.k)))


def average_precision(t: TopK) -> np.ndarray:
    found = np.zeros(len(t.hits), dtype=np.int64)
    precision_sum = np.zeros(len(t.hits))
    for i in range(t.grade.shape[1]):
        found = found + t.relevant[:, i]
        precision_sum = np.where(t.relevant[:, i], precision_sum + found / (i + 1), precision_sum)
    return _ratio(precision_sum, t.total_relevant)


# The array form of each metric (its record's ``array``, engine/metrics/registry.py): the values of
# every ranking at the cut-off ``t`` holds.


def dcg(t: TopK) -> np.ndarray:
    return t.dcg


def precision(t: TopK) -> np.ndarray:
    return t.hits / t.k


def recall(t: TopK) -> np.ndarray:
    return _ratio(t.hits, t.total_relevant)


def recall_single_hit(t: TopK) -> np.ndarray:
    return (t.hits > 0).astype(float)


def reciprocal_rank(t: TopK) -> np.ndarray:
    return np.where(t.hits > 0, 1.0 / (t.relevant.argmax(axis=1) + 1), 0.0)


def mean_relevance(t: TopK) -> np.ndarray:
    return _over_places(np.where(t.counted, t.grade, 0).sum(axis=1), t.places)


def judged(t: TopK) -> np.ndarray:
    """Results holding a grade in the top k, over k (ir_measures' Judged@k)."""
    return (t.present & t.r.known[:, :t.k]).sum(axis=1) / t.k


def pct_highly_relevant(t: TopK) -> np.ndarray:
    return t.graded_share(t.grade >= HIGHLY_RELEVANT)


def pct_relevant(t: TopK) -> np.ndarray:
    return t.graded_share(t.grade >= t.threshold)


def pct_not_relevant(t: TopK) -> np.ndarray:
    return _over_places(t.places - (t.counted & (t.grade >= t.threshold)).sum(axis=1), t.places)


def ndcg_judged(t: TopK) -> np.ndarray:
    return arrays_holes.ndcg_judged(t, _ideal_gains, _discounted_gain, _ratio)
