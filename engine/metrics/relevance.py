"""The grades of the results returned: their mean and their distribution.

The denominator of each is the number of results returned in the top k, min(k, len(grades)),
and no results -> 0.0. The shares are fractions in 0..1 (the dashboard shows them as percents).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from searchgrade.engine.metrics._first_k import first_k_grades

#: Grade from which a result counts as highly relevant ("dedicated to the query"), on any scale.
HIGHLY_RELEVANT = 3


def _share(top: Sequence[int], hit: Callable[[int], bool]) -> float:
    return sum(1 for g in top if hit(g)) / len(top) if top else 0.0


def mean_relevance(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """Mean grade over the results in the top k (None counts as 0); no results -> 0.0."""
    top = first_k_grades(grades, k)
    return sum(top) / len(top) if top else 0.0


def pct_highly_relevant(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """Share of the results in the top k with grade >= 3 (None counts as 0); no results -> 0.0."""
    return _share(first_k_grades(grades, k), lambda g: g >= HIGHLY_RELEVANT)


def pct_relevant(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """Share of the results in the top k with grade >= threshold (None counts as 0); none -> 0.0."""
    return _share(first_k_grades(grades, k), lambda g: g >= threshold)


def pct_not_relevant(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """Share of the results in the top k with grade < threshold (None counts as 0); none -> 0.0.

    pct_relevant + pct_not_relevant = 1 whenever there is at least one result.
    """
    return _share(first_k_grades(grades, k), lambda g: g < threshold)
