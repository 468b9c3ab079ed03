"""Helpers shared by the metric functions: the first k grades as numbers, and the relevant count.

(indexes.base.top_k is another thing: the rows of the k highest scores.)
"""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.core.checks import check_k


def first_k_grades(grades: Sequence[int | None], k: int) -> list[int]:
    """The first k grades, with None (no grade known) counted as 0, and a negative grade too.

    A negative grade (Cranfield's -1) means "not relevant" in trec_eval: gain 0 in NDCG, never
    relevant. (The loader already reads negative qrels grades as 0; this keeps the functions safe.)

    Raises:
        ValueError: k is not a positive integer.
    """
    check_k(k)
    return [0 if g is None or g < 0 else g for g in grades[:k]]


def count_relevant(grades: Sequence[int | None], threshold: int) -> int:
    """How many grades are >= threshold (None counts as 0)."""
    return sum(1 for g in grades if g is not None and g >= threshold)


def relevant_denominator(pool: Sequence[int | None], top: Sequence[int], threshold: int) -> int:
    """The number of known relevant documents for recall and MAP.

    That is the relevant count in the pool, or in the top k if that is larger: a pool that misses
    some retrieved grades (an inconsistent caller) must not push recall or AP above 1.
    """
    return max(count_relevant(pool, threshold), count_relevant(top, threshold))
