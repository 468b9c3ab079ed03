"""The grades of the top k: their mean and their distribution, over the k places.

Every denominator is k, as Precision@k's: a place no result holds (a strategy that returned fewer
than k) counts as grade 0, not relevant, so a short list is never rewarded. None (no grade known)
counts as 0, as everywhere. The shares are fractions in 0..1 (the dashboard shows them as
percents), and pct_relevant + pct_not_relevant = 1 always.

(A result whose judgment failed is no grade at all: engine/run/scoring.py leaves such places out
of the k, calling these with k minus their number.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from searchgrade.engine.metrics._first_k import first_k_grades

#: Grade from which a result counts as highly relevant ("dedicated to the query"), on any scale.
HIGHLY_RELEVANT = 3


def _share(grades: Sequence[int | None], k: int, hit: Callable[[int], bool]) -> float:
    return sum(1 for g in first_k_grades(grades, k) if hit(g)) / k


def mean_relevance(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """Mean relevance@k = (g_1 + ... + g_k) / k, a missing place counting 0.

    Edge cases: fewer than k results -> the missing places are 0 (grades [3] at k = 10 -> 0.3,
    not 3.0); no results -> 0.0; None -> 0.
    """
    return sum(first_k_grades(grades, k)) / k


def pct_highly_relevant(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """Share highly relevant@k = #{i <= k : g_i >= 3} / k.

    Edge cases: a missing place is not highly relevant; no results -> 0.0; None -> 0.
    """
    return _share(grades, k, lambda g: g >= HIGHLY_RELEVANT)


def pct_relevant(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """Share relevant@k = #{i <= k : g_i >= threshold} / k: Precision@k's figure.

    Edge cases: a missing place is not relevant; no results -> 0.0; None -> 0.
    """
    return _share(grades, k, lambda g: g >= threshold)


def pct_not_relevant(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """Share not relevant@k = (k - #{i <= k : g_i >= threshold}) / k = 1 - pct_relevant.

    Edge cases: a missing place is not relevant (fewer than k results raise the share); no
    results -> 1.0; None -> 0, not relevant.
    """
    return (k - sum(1 for g in first_k_grades(grades, k) if g >= threshold)) / k
