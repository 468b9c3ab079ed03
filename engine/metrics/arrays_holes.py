"""The numpy twins of the metrics for incomplete judgments (engine.metrics.arrays registers them).

Each gives, ranking by ranking, what its per-query function gives, with the same arithmetic in the
same order (sums rank by rank, the same divisions of the same integers), so the values are equal
to the last bit. They take arrays.py's one cut-off view (``t``: its top k and what several metrics
share) and the ``Holes`` the caller read beside it; each metric's record (engine/metrics/registry.py)
names its function here (ndcg_judged through arrays.py, which passes it its helpers: this module
does not import it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from searchgrade.engine.metrics.infap import EPSILON


@dataclass
class Holes:
    """What the metrics for incomplete judgments need beside the top k: every stored result of each
    ranking (D >= k columns, rank 1 first) and the pool's judged non-relevant count.

    Attributes:
        grade, present, known: As in RankedGrades, over the D places (grade 0 where none is known).
        hole: The result is in the judging pool but was not judged (a negative grade: trec_eval's
            "pooled, not judged"). A result with no grade (``known`` False) is a hole too.
        pool_nonrelevant: (rankings,): the query's judged grades below the threshold, holes left out.
        max_grade: The grade scale's top grade (ERR).
    """

    grade: np.ndarray
    present: np.ndarray
    known: np.ndarray
    hole: np.ndarray
    pool_nonrelevant: np.ndarray
    max_grade: int


def _holes(t: Any) -> Holes:
    holes = t.r.holes
    if holes is None:
        raise ValueError("the metrics for incomplete judgments need the rankings' Holes "
                         "(RankedGrades.holes): read them with the run's grades")
    return holes


def _judged(t: Any) -> np.ndarray:
    """The top k's results whose grade is known and not a hole."""
    h = _holes(t)
    return t.present & h.known[:, :t.k] & ~h.hole[:, :t.k]


def bpref(t: Any) -> np.ndarray:
    h = _holes(t)
    judged = _judged(t)
    relevant_result = judged & (t.grade >= t.threshold)
    nonrel_result = judged & (t.grade < t.threshold)
    relevant = t.total_relevant
    nonrelevant = np.maximum(h.pool_nonrelevant, nonrel_result.sum(axis=1))
    denominator = np.maximum(np.minimum(nonrelevant, relevant), 1)
    total = np.zeros(len(relevant))
    above = np.zeros(len(relevant), dtype=np.int64)
    for i in range(t.grade.shape[1]):
        add = np.where(above > 0, 1.0 - np.minimum(above, relevant) / denominator, 1.0)
        total = np.where(relevant_result[:, i], total + add, total)
        above = above + nonrel_result[:, i]
    return np.divide(total, relevant, out=np.zeros(len(total)), where=relevant > 0)


def ndcg_judged(t: Any, ideal_gains: Callable, discounted_gain: Callable, ratio: Callable) -> np.ndarray:
    """DCG of the condensed list (the holes of every stored result removed, then cut at k) over the
    ideal of the pool and that condensed top k."""
    h = _holes(t)
    judged = h.present & h.known & ~h.hole
    order = np.argsort(~judged, axis=1, kind="stable")[:, :t.k]
    gains = np.take_along_axis(np.maximum(h.grade, 0), order, axis=1)
    kept = np.take_along_axis(judged, order, axis=1)
    gains = np.where(kept, gains, 0)
    if gains.shape[1] < t.k:  # fewer stored places than k
        pad = t.k - gains.shape[1]
        gains, kept = np.pad(gains, ((0, 0), (0, pad))), np.pad(kept, ((0, 0), (0, pad)))
    condensed = replace(t.r, grade=gains, present=kept)
    return ratio(discounted_gain(gains), discounted_gain(ideal_gains(condensed, t.k)))


def err(t: Any) -> np.ndarray:
    top = _holes(t).max_grade
    score = np.zeros(len(t.grade))
    not_stopped = np.ones(len(t.grade))
    for i in range(t.grade.shape[1]):
        r = (2 ** np.minimum(t.grade[:, i], top) - 1) / 2 ** top
        score = score + r * not_stopped / (i + 1)
        not_stopped = not_stopped * (1.0 - r)
    return score


def rbp(t: Any, p: float) -> np.ndarray:
    total = np.zeros(len(t.grade))
    for i in range(t.grade.shape[1]):
        total = np.where(t.relevant[:, i], total + p ** i, total)
    return (1.0 - p) * total


def rbp_residual(t: Any, p: float) -> np.ndarray:
    holes = t.present & ~_judged(t)
    total = np.zeros(len(t.grade))
    for i in range(t.grade.shape[1]):
        total = np.where(holes[:, i], total + p ** i, total)
    return (1.0 - p) * total + np.where(t.n_present == t.k, p ** t.k, 0.0)


def infap(t: Any) -> np.ndarray:
    h = _holes(t)
    known = t.present & h.known[:, :t.k]
    pooled_unjudged = known & h.hole[:, :t.k]
    judged = known & ~h.hole[:, :t.k]
    relevant_result = judged & (t.grade >= t.threshold)
    nonrel_result = judged & (t.grade < t.threshold)
    n = len(t.grade)
    total = np.zeros(n)
    rel = np.zeros(n, dtype=np.int64)
    nonrel = np.zeros(n, dtype=np.int64)
    unjudged = np.zeros(n, dtype=np.int64)
    for i in range(t.grade.shape[1]):
        if i == 0:
            add = np.ones(n)
        else:
            pooled = rel + nonrel + unjudged
            add = 1.0 / (i + 1) + (i / (i + 1)) * (pooled / i) * ((rel + EPSILON) / (rel + nonrel + 2 * EPSILON))
        total = np.where(relevant_result[:, i], total + add, total)
        rel = rel + relevant_result[:, i]
        nonrel = nonrel + nonrel_result[:, i]
        unjudged = unjudged + pooled_unjudged[:, i]
    relevant = t.total_relevant
    return np.divide(total, relevant, out=np.zeros(n), where=relevant > 0)


def r_precision(t: Any) -> np.ndarray:
    relevant = t.total_relevant
    within = np.arange(t.grade.shape[1])[None, :] < relevant[:, None]
    return np.divide((t.relevant & within).sum(axis=1), relevant, out=np.zeros(len(relevant)),
                     where=relevant > 0)
