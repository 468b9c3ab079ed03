"""Judged@k: how complete the grades are."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.core.checks import check_k


def judged(grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int) -> float:
    """Share of the results in the top k whose grade is known (not None).

    The denominator is the number of results returned, min(k, len(grades)), as in ir_measures'
    Judged@k; no results -> 0.0. The only metric where None differs from 0.
    """
    check_k(k)
    top = grades[:k]
    return sum(1 for g in top if g is not None) / len(top) if top else 0.0
