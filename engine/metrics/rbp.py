"""Rank-biased precision (RBP) at the run's relevance threshold, and its residual."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.core.checks import check_k
from searchgrade.engine.metrics._first_k import first_k_grades
from searchgrade.engine.metrics._holes import is_hole

#: The reader's persistence: the chance of looking at the next result (Moffat and Zobel's 0.8).
DEFAULT_PERSISTENCE = 0.8


def rbp(grades: Sequence[int | None], pool: Sequence[int | None], k: int, threshold: int, *,
        p: float = DEFAULT_PERSISTENCE) -> float:
    """RBP = (1 - p) * sum over i = 1..k of p^(i - 1) * [g_i >= threshold].

    Binary relevance at the threshold (ir_measures' ``RBP(rel=T, p=0.8)``, computed by cwl_eval),
    over the ranked list cut at k: the whole stored list at the run's depth, which is what a bare
    ``rbp`` means. A hole (no grade, or a negative one) counts as not relevant: the lower bound,
    which ``rbp_residual`` completes.

    Edge cases: no results -> 0.0; the pool is unused. (cwl_eval normalises its weights over 1,000
    ranks: at p = 0.8 that changes nothing above 1e-90.)
    """
    top = first_k_grades(grades, k)
    return (1.0 - p) * sum(p ** i for i, g in enumerate(top) if g >= threshold)


def rbp_residual(grades: Sequence[int | None], pool: Sequence[int | None], k: int, threshold: int, *,
                 p: float = DEFAULT_PERSISTENCE) -> float:
    """How much RBP could still rise: (1 - p) * sum over the holes i <= n of p^(i - 1), plus p^n for
    the results below the cut when the list reaches it (n = k).

    RBP + residual is the value if every hole were relevant (Moffat and Zobel, TOIS 2008; cwl_eval's
    residual, whose best case gives each hole and each rank past the list the top gain). A hole is a
    result with no grade (unjudged, or a failed judgment) or a negative one (in the pool, not
    judged). A list shorter than k is everything the strategy returned, so nothing below it can be
    relevant and no tail is added (cwl_eval would add p^n): a short list is not uncertain.

    Edge cases: no results -> 0.0; every result judged and fewer than k -> 0.0. The pool is unused.
    """
    check_k(k)
    top = grades[:k]
    holes = (1.0 - p) * sum(p ** i for i, g in enumerate(top) if is_hole(g))
    return holes + (p ** k if len(top) == k else 0.0)
