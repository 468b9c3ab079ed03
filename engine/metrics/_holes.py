"""What the metrics for incomplete judgments share: which grades are holes, and the pool's counts.

A *hole* is a result nobody judged: grade None (not in the qrels, a failed judgment, or a
pair the judge was not asked about), or a negative grade. A negative grade is trec_eval's mark for a
document that is in the judging pool but was not judged (its ``RELVALUE_UNJUDGED``, the -1 of
infAP's sampled qrels): the standard metrics count it as not relevant (``first_k_grades`` makes it 0,
as trec_eval does), and bpref, the condensed lists, infAP and the RBP residual count it as a hole,
as trec_eval does for the first three.
"""

from __future__ import annotations

from collections.abc import Sequence


def is_hole(grade: int | None) -> bool:
    """Nobody judged this result: no grade, or a negative one (in the pool, not judged)."""
    return grade is None or grade < 0


def judged_counts(pool: Sequence[int | None], top: Sequence[int | None], threshold: int) -> tuple[int, int]:
    """(relevant, judged not relevant) documents known for the query.

    Counted in the pool, the holes left out; where the ranked list holds more of either than the
    pool (an inconsistent caller), its count, so no ratio can pass 1.
    """
    def counts(grades: Sequence[int | None]) -> tuple[int, int]:
        judged = [g for g in grades if not is_hole(g)]
        return sum(1 for g in judged if g >= threshold), sum(1 for g in judged if g < threshold)

    (pool_rel, pool_nonrel), (top_rel, top_nonrel) = counts(pool), counts(top)
    return max(pool_rel, top_rel), max(pool_nonrel, top_nonrel)
