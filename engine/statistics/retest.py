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

from searchgrade.engine.statistics.judge_vs_human import (
    JUDGE_LABELS,
    Estimate,
    PerQuery,
    linear_weights,
    percentile_estimate,
)
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
    size = len(labels)
    # Per query: its confusion of first grade (rows) and repeat (columns), then [sum of per-pair
    # exact agreement, pairs, pairs changed] in a last row of its own.
    counts = PerQuery(labels, (size + 1, max(size, 3)))
    repeats = 0
    for query, grades in graded:
        grades = list(grades)
        if len(grades) < 2:
            continue
        positions = [counts.at(g) for g in grades]
        of = counts.of(query)
        pairs = list(combinations(grades, 2))
        of[size, :3] += (sum(a == b for a, b in pairs) / len(pairs), 1, len(set(grades)) > 1)
        for repeat in positions[1:]:
            of[positions[0], repeat] += 1
        repeats = max(repeats, len(grades) - 1)
    if not len(counts):
        empty = Estimate(None, None, None)
        return Retest(0, 0, 0, empty, empty, empty)
    total, resampled = counts.resampled(n_resamples, seed)
    linear = linear_weights(labels)
    overall, sums = total[size, :3], resampled[:, size, :3]
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = float(weighted_kappas(total[None, :size, :size], linear)[0])
        return Retest(
            n_pairs=int(overall[1]), n_queries=len(counts), repeats=repeats,
            exact=percentile_estimate(overall[0] / overall[1], sums[:, 0] / sums[:, 1], CONFIDENCE),
            kappa_linear=percentile_estimate(kappa, weighted_kappas(resampled[:, :size, :size], linear), CONFIDENCE),
            changed=percentile_estimate(overall[2] / overall[1], sums[:, 2] / sums[:, 1], CONFIDENCE),
        )
