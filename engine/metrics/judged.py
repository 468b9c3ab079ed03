"""Judged@k: how complete the grades are (a diagnostic, never ranked as quality)."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.core.checks import check_k


def judged(grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int) -> float:
    """Judged@k = #{i <= k : g_i is known (not None)} / k.

    The denominator is k, as ir_measures' Judged@k ("P@k with a rel lower than any judgment") and
    every other figure over the top k: a place no result holds is not judged, so a strategy that
    returned 3 results of which all are judged has judged@10 = 0.3. No results -> 0.0. The only
    metric where None differs from 0; a negative grade (in the pool, not judged) counts as judged,
    as ir_measures counts it.
    """
    check_k(k)
    return sum(1 for g in grades[:k] if g is not None) / k
