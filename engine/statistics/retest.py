"""Test-retest: does a judge say the same thing twice?

Each pair was graded once and then re-graded N more times (``searchgrade judges RUN --repeat N``).
With the pair's grades g_0 (the first) .. g_N:

- **exact agreement** is, over pairs, the mean share of equal grades among the (N+1) N / 2 pairs of
  its grades: 1.0 for a judge that never changes its mind, 1/4 for one that draws uniformly at
  random on the 0-3 scale;
- **weighted kappa** (linear, on the 0-3 scale: engine/statistics/kappa.py) of the first grade
  against each repeat, every (g_0, g_r) counted once;
- **changed**: the share of pairs whose grade is not the same in every repeat.

Each with a 95% percentile interval from a bootstrap over queries (a query's pairs share its
difficulty, as in engine/statistics/judge_vs_human.py). Pairs graded fewer than twice are left out.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from searchgrade.engine.statistics.judge_vs_human import JUDGE_LABELS, Estimate
from searchgrade.engine.statistics.kappa import weighted_kappas

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Retest:
    """A judge's grades of the same pairs, asked again."""

    n_pairs: int
    n_queries: int
    #: The most repeats a pair has (its grades: one more).
    repeats: int
    exact: Estimate
    kappa_linear: Estimate
    changed: Estimate


def _interval(point: float, resampled: np.ndarray) -> Estimate:
    if not np.isfinite(point):
        return Estimate(None, None, None)
    finite = resampled[np.isfinite(resampled)]
    if not len(finite):
        return Estimate(float(point), None, None)
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Estimate(float(point), float(low), float(high))


def retest_agreement(graded: Sequence[tuple[Hashable, Sequence[int]]], labels: Sequence[int] = JUDGE_LABELS, *,
                     n_resamples: int = 2000, seed: int = 0) -> Retest:
    """Test-retest figures of a judge (see the module).

    Args:
        graded: (query key, [first grade, repeat 1, ..., repeat N]) per pair.
        labels: The ordered scale.

    Raises:
        ValueError: a grade outside ``labels``.
    """
    labels = list(labels)
    index = {g: i for i, g in enumerate(labels)}
    size = len(labels)
    queries: dict[Hashable, int] = {}
    # Per query: [sum of per-pair exact agreement, pairs, pairs changed] and its confusion matrix.
    sums: list[np.ndarray] = []
    confusions: list[np.ndarray] = []
    repeats = 0
    for query, grades in graded:
        grades = list(grades)
        if len(grades) < 2:
            continue
        for g in grades:
            if g not in index:
                raise ValueError(f"grade {g!r} is not on the scale {labels}")
        q = queries.setdefault(query, len(queries))
        if q == len(sums):
            sums.append(np.zeros(3))
            confusions.append(np.zeros((size, size)))
        pairs = list(combinations(grades, 2))
        sums[q] += (sum(a == b for a, b in pairs) / len(pairs), 1, len(set(grades)) > 1)
        for repeat in grades[1:]:
            confusions[q][index[grades[0]], index[repeat]] += 1
        repeats = max(repeats, len(grades) - 1)
    if not sums:
        empty = Estimate(None, None, None)
        return Retest(0, 0, 0, empty, empty, empty)
    per_query = np.stack(sums)  # (Q, 3)
    by_query = np.stack(confusions)  # (Q, K, K)
    n_q = len(per_query)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_q, np.full(n_q, 1.0 / n_q), size=n_resamples)  # (B, Q)
    totals = weights @ per_query  # (B, 3)
    values = np.asarray(labels, dtype=float)
    span = values.max() - values.min() if size > 1 else 1.0
    linear = np.abs(values[:, None] - values[None, :]) / span
    overall = per_query.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        resampled_kappa = weighted_kappas(np.einsum("bq,qij->bij", weights, by_query), linear)
        kappa = float(weighted_kappas(by_query.sum(axis=0)[None], linear)[0])
        return Retest(
            n_pairs=int(overall[1]), n_queries=n_q, repeats=repeats,
            exact=_interval(overall[0] / overall[1], totals[:, 0] / totals[:, 1]),
            kappa_linear=_interval(kappa, resampled_kappa),
            changed=_interval(overall[2] / overall[1], totals[:, 2] / totals[:, 1]),
        )
