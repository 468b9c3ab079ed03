"""Expected reciprocal rank (ERR) for graded labels, as gdeval defines it."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.engine.metrics._first_k import first_k_grades


def stop_probability(grade: int, max_grade: int) -> float:
    """R(g) = (2^g - 1) / 2^max_grade: how likely a reader stops at a result of grade g."""
    return (2 ** min(grade, max_grade) - 1) / 2 ** max_grade


def err(grades: Sequence[int | None], pool: Sequence[int | None], k: int, threshold: int, *,
        max_grade: int | None = None) -> float:
    """ERR@k = sum over i = 1..k of R(g_i) / i * prod over j < i of (1 - R(g_j)).

    R(g) = (2^g - 1) / 2^max_grade (Chapelle et al., CIKM 2009), with the scale's top grade as
    max_grade: gdeval (the TREC Web track's script, ir_measures' ``ERR@k``) fixes it at 4, so on a
    0-4 scale this equals ir_measures; on the judge's 0-3 scale it is 3, on binary labels 1.

    Edge cases: an unjudged result (None) or a negative grade gains 0 (gdeval reads only positive
    grades); a grade above max_grade counts as max_grade; no results -> 0.0. max_grade None (a
    caller without a scale) takes the largest grade in the pool and the top k, at least 1. The
    threshold is unused: grades are graded.
    """
    top = first_k_grades(grades, k)
    if max_grade is None:
        max_grade = max([1, *top, *(g for g in pool if g is not None)])
    score = 0.0
    not_stopped = 1.0
    for rank, g in enumerate(top, start=1):
        r = stop_probability(g, max_grade)
        score += r * not_stopped / rank
        not_stopped *= 1.0 - r
    return score
