"""Recall at k, multi-hit (the share found) and single-hit (any found)."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.engine.metrics._first_k import count_relevant, first_k_grades, relevant_denominator


def recall(grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int) -> float:
    """R@k = (relevant in the top k) / (relevant in the pool), relevant meaning grade >= threshold.

    Edge cases: no relevant grade in the pool -> 0.0; None counts as 0. If the top k holds more
    relevant grades than the pool (an inconsistent caller), the top k count is the denominator,
    so the value never exceeds 1.
    """
    top = first_k_grades(grades, k)
    total = relevant_denominator(pool, top, threshold)
    return count_relevant(top, threshold) / total if total else 0.0


def recall_single_hit(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """Single-hit recall@k (Success@k): 1.0 if any of the top k has grade >= threshold, else 0.0.

    Edge cases: None counts as 0; no results -> 0.0. The pool is unused.
    """
    return 1.0 if count_relevant(first_k_grades(grades, k), threshold) else 0.0
