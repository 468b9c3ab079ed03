"""Binary preference (bpref), as trec_eval computes it: judged documents only."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.core.checks import check_k
from searchgrade.engine.metrics._holes import is_hole, judged_counts


def bpref(grades: Sequence[int | None], pool: Sequence[int | None], k: int, threshold: int) -> float:
    """bpref = (1 / R) * sum over the relevant results r of (1 - min(n_r, R) / min(N, R)).

    R is the number of relevant documents known for the query (grade >= threshold), N the number
    judged not relevant (0 <= grade < threshold), and n_r the number of judged non-relevant results
    ranked above r. Holes (no grade, or a negative one: in the pool, not judged) are skipped, not
    counted as non-relevant: that is the point of bpref (Buckley and Voorhees, SIGIR 2004). This is
    trec_eval's ``bpref`` (m_bpref.c) over the ranked list cut at k: the whole stored list at the
    run's depth, which is the cut-off a bare ``bpref`` means.

    Edge cases: R = 0 -> 0.0; a relevant result with no judged non-relevant one above it adds 1
    (also when N = 0, where the ratio is undefined, as in trec_eval); no results -> 0.0.
    """
    check_k(k)
    top = grades[:k]
    relevant, nonrelevant = judged_counts(pool, top, threshold)
    if not relevant:
        return 0.0
    total = 0.0
    nonrel_above = 0
    for g in top:
        if is_hole(g):
            continue
        if g < threshold:
            nonrel_above += 1
        elif nonrel_above:
            total += 1.0 - min(nonrel_above, relevant) / min(nonrelevant, relevant)
        else:
            total += 1.0
    return total / relevant
