"""Inferred average precision (infAP), for qrels that judged a sample of the pool."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.core.checks import check_k
from searchgrade.engine.metrics._holes import judged_counts

#: trec_eval's INFAP_EPSILON: keeps the estimate defined when nothing above a result was judged.
EPSILON = 0.00001


def infap(grades: Sequence[int | None], pool: Sequence[int | None], k: int, threshold: int) -> float:
    """infAP = (1 / R) * sum over the relevant results at ranks i of E[precision at i], where

    E[precision at 1] = 1 and, for i > 1,
    E = 1/i + ((i - 1)/i) * (pooled above / (i - 1)) * ((rel above + eps) / (judged above + 2 eps)),

    "pooled above" counting the results above i in the judging pool (judged, or with a negative
    grade: pooled but not sampled for judging), "rel above" and "judged above" the judged ones
    among them (Yilmaz and Aslam, CIKM 2006; trec_eval's ``infAP``, m_infAP.c, eps = 1e-5). A result
    with no grade is outside the pool: precision 0 there.

    It applies only when the qrels record sampling (some pooled documents carry a negative grade):
    otherwise every pooled document was judged, and the run does not store it (metrics say so).
    Edge cases: R = 0 -> 0.0; no results -> 0.0.
    """
    check_k(k)
    top = grades[:k]
    relevant, _ = judged_counts(pool, top, threshold)
    if not relevant:
        return 0.0
    total = 0.0
    rel_above = nonrel_above = unjudged_above = 0
    for i, g in enumerate(top):
        if g is None:
            continue
        if g < 0:
            unjudged_above += 1
        elif g < threshold:
            nonrel_above += 1
        else:
            if i == 0:
                total += 1.0
            else:
                pooled = rel_above + nonrel_above + unjudged_above
                total += 1.0 / (i + 1) + (i / (i + 1)) * (pooled / i) * (
                    (rel_above + EPSILON) / (rel_above + nonrel_above + 2 * EPSILON))
            rel_above += 1
    return total / relevant
