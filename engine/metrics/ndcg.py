"""Normalised discounted cumulative gain."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from searchgrade.engine.metrics._first_k import first_k_grades
from searchgrade.engine.metrics.dcg import discounted_gain


def ndcg(grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int) -> float:
    """NDCG@k = DCG@k / ideal DCG@k, where the ideal ranks the pool's grades in decreasing order.

    Edge cases: ideal DCG = 0 (no positive grade known) -> 0.0; None counts as 0 (in grades and in
    the pool). A grade in the top k that the pool lacks (an inconsistent caller) is added to the
    ideal, so the value never exceeds 1; with a consistent pool (the qrels, or every judged document
    for the query) this changes nothing. The threshold is unused: grades are the gains.
    """
    top = first_k_grades(grades, k)
    known = Counter(g for g in pool if g is not None and g > 0)
    # Multiset union: each grade value as many times as the pool or the top k hold it.
    known |= Counter(g for g in top if g > 0)
    ideal = discounted_gain(sorted(known.elements(), reverse=True)[:k])
    if ideal <= 0:
        return 0.0
    return discounted_gain(top) / ideal
