"""R-precision: precision at the number of relevant documents known for the query."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.engine.metrics._first_k import count_relevant, first_k_grades, relevant_denominator


def r_precision(grades: Sequence[int | None], pool: Sequence[int | None], k: int, threshold: int) -> float:
    """R-prec = (relevant results in the top R) / R, R = the relevant documents known for the query.

    trec_eval's ``Rprec`` (ir_measures' ``Rprec(rel=T)``) over the ranked list cut at k: at the run's
    depth (what a bare ``r_precision`` means) the whole stored list; a list shorter than R counts
    its missing places as not relevant.

    Edge cases: R = 0 -> 0.0; None and negative grades count as 0. If the top k holds more
    relevant grades than the pool (an inconsistent caller), that count is R.
    """
    top = first_k_grades(grades, k)
    total = relevant_denominator([g for g in pool if g is not None], top, threshold)
    return count_relevant(top[:total], threshold) / total if total else 0.0
