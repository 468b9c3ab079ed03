"""Reciprocal rank (averaged over queries: MRR)."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.engine.metrics._first_k import first_k_grades


def reciprocal_rank(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """RR@k = 1 / rank of the first result with grade >= threshold within the top k, else 0.0.

    Edge cases: None counts as 0; no results -> 0.0. The pool is unused.
    """
    for rank, g in enumerate(first_k_grades(grades, k), start=1):
        if g >= threshold:
            return 1.0 / rank
    return 0.0
