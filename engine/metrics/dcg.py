"""Discounted cumulative gain with linear gain."""

from __future__ import annotations

import math
from collections.abc import Sequence

from searchgrade.engine.metrics._first_k import first_k_grades


def discounted_gain(grades: Sequence[int]) -> float:
    """sum over i = 1..len(grades) of grades[i - 1] / log2(i + 1)."""
    return sum(g / math.log2(i + 1) for i, g in enumerate(grades, start=1))


def dcg(grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int) -> float:
    """DCG@k = sum over i = 1..k of g_i / log2(i + 1): linear gain, log2 discount.

    Edge cases: None counts as 0; fewer than k results sum over those returned; no results -> 0.0.
    The pool and the threshold are unused.
    Examples: [3, 2, 0, 0, 0] -> 4.26; ten 3s -> 13.63 (the maximum at k = 10 on a 0-3 scale).
    """
    return discounted_gain(first_k_grades(grades, k))


def ideal_dcg(pool: Sequence[int | None], k: int) -> float:
    """The query's ideal DCG@k: its known grades in decreasing order, cut at k (NDCG's denominator).

    Edge cases: no positive grade -> 0.0; None and negative grades count as 0.
    """
    return discounted_gain(sorted((g for g in pool if g is not None and g > 0), reverse=True)[:k])
