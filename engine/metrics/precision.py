"""Precision at k."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.engine.metrics._first_k import count_relevant, first_k_grades


def precision(grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int) -> float:
    """P@k = (number of the top k with grade >= threshold) / k.

    Edge cases: the denominator is always k, so fewer than k results count the missing ranks as
    not relevant (as trec_eval does); None counts as 0; no results -> 0.0.
    """
    return count_relevant(first_k_grades(grades, k), threshold) / k
