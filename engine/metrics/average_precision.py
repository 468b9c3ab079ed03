"""Average precision at k (averaged over queries: MAP)."""

from __future__ import annotations

from collections.abc import Sequence

from searchgrade.engine.metrics._first_k import first_k_grades, relevant_denominator


def average_precision(
    grades: Sequence[int | None], pool: Sequence[int], k: int, threshold: int
) -> float:
    """AP@k = (sum of P@i over the ranks i <= k holding a relevant result) / (relevant in the pool).

    Relevant means grade >= threshold. The denominator is every known relevant document, not
    min(k, that number), as in trec_eval's map_cut_k and ir_measures' AP@k.
    Edge cases: no relevant grade in the pool -> 0.0; None counts as 0. If the top k holds more
    relevant grades than the pool (an inconsistent caller), the top k count is the denominator.
    """
    top = first_k_grades(grades, k)
    total = relevant_denominator(pool, top, threshold)
    if not total:
        return 0.0
    hits = 0
    precision_sum = 0.0
    for rank, g in enumerate(top, start=1):
        if g >= threshold:
            hits += 1
            precision_sum += hits / rank
    return precision_sum / total
