"""Helpers shared by the metric functions: the top k as numbers, and the relevant count."""

from __future__ import annotations

from collections.abc import Sequence


def check_k(k: int) -> None:
    """Raises ValueError unless k is a positive integer."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k of {k!r} is not a positive integer: use k >= 1, e.g. k=10")


def top_k(grades: Sequence[int | None], k: int) -> list[int]:
    """The first k grades, with None (no grade known) counted as 0.

    Raises:
        ValueError: k is not a positive integer.
    """
    check_k(k)
    return [0 if g is None else g for g in grades[:k]]


def count_relevant(grades: Sequence[int | None], threshold: int) -> int:
    """How many grades are >= threshold (None counts as 0)."""
    return sum(1 for g in grades if g is not None and g >= threshold)


def relevant_denominator(pool: Sequence[int | None], top: Sequence[int], threshold: int) -> int:
    """The number of known relevant documents for recall and MAP.

    That is the relevant count in the pool, or in the top k if that is larger: a pool that misses
    some retrieved grades (an inconsistent caller) must not push recall or AP above 1.
    """
    return max(count_relevant(pool, threshold), count_relevant(top, threshold))
