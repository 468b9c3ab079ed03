"""NDCG over the condensed list: the unjudged results removed before cutting at k."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.core.checks import check_k
from searchgrade.engine.metrics._holes import is_hole
from searchgrade.engine.metrics.ndcg import ndcg


def ndcg_judged(grades: Sequence[int | None], pool: Sequence[int | None], k: int, threshold: int) -> float:
    """NDCG@k of the condensed list: the ranked list with its holes removed (no grade, or a
    negative one), the judged results moving up, then cut at k (Sakai, SIGIR 2007).

    Equals ir_measures' ``nDCG(judged_only=True)@k`` (trec_eval's ndcg_cut with -J). The gain is
    the grade and the ideal the pool's grades in decreasing order, as in :func:`ndcg`; a strategy
    is neither punished for an unjudged result (as NDCG@k is) nor rewarded for one.

    Edge cases: no judged result -> 0.0; ideal DCG = 0 -> 0.0. The threshold is unused.
    """
    check_k(k)
    condensed = [g for g in grades if not is_hole(g)]
    return ndcg(condensed, [g for g in pool if not is_hole(g)], k, threshold)
