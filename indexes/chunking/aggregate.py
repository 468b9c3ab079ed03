"""How a document's chunk scores become its score: the document ranking of a chunk ranking.

    aggregate = "max"        the best chunk's score (the document ranks where its best chunk does)
    aggregate = "sum_top2"   the sum of its 2 best retrieved chunks' scores (any n: sum_top3, ...)
    aggregate = "first"      its first chunk's score (the opening passage: a lead, an abstract)

Only retrieved chunks count: a document's score is the aggregate of its chunks among those the
search returned (``sum_top2`` of a document with one retrieved chunk is that chunk's score; under
``first`` a document whose first chunk was not retrieved is not ranked). Equal scores rank in the
order of the documents' best chunks. The matched chunk shown for a document is its best retrieved
chunk (its first chunk under ``first``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from searchgrade.core.records import SearchGradeError

_SUM_TOP = re.compile(r"sum_top([1-9][0-9]*)")
#: What ``aggregate`` takes, for messages.
AGGREGATES = ("max", "sum_top2", "first")


class Aggregate(NamedTuple):
    """One way to aggregate: "max", "first", or "sum_top" with its n."""

    name: str
    n: int = 1

    def __str__(self) -> str:
        return f"sum_top{self.n}" if self.name == "sum_top" else self.name


def parse_aggregate(value: str, where: str = "aggregate") -> Aggregate:
    """``"max"``, ``"first"`` or ``"sum_topN"`` (N >= 1).

    Raises:
        SearchGradeError: anything else, with the accepted values.
    """
    if value in ("max", "first"):
        return Aggregate(value)
    found = _SUM_TOP.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise SearchGradeError(f"{where}: {value!r} is not known: use one of {', '.join(AGGREGATES)} "
                               "(sum_topN sums a document's N best chunks, e.g. sum_top3)")
    return Aggregate("sum_top", int(found.group(1)))


class Ranked(NamedTuple):
    """One document of the aggregated ranking: its row, its score and the chunk that matched."""

    doc: int
    score: float
    chunk: int


def aggregate(rows: Sequence[int], scores: Sequence[float], doc_of: Sequence[int], position: Sequence[int],
              how: Aggregate) -> list[Ranked]:
    """The documents of a chunk ranking, ranked by ``how``.

    Args:
        rows: chunk rows, best first (a search's result).
        scores: their scores, in the same order.
        doc_of: chunk row -> document row (the whole collection's chunks).
        position: chunk row -> its place in its document.
        how: the aggregate.
    """
    best: dict[int, int] = {}  # document -> its best chunk's place in ``rows``
    totals: dict[int, list[float]] = {}
    for place, (row, score) in enumerate(zip(rows, scores, strict=True)):
        doc = int(doc_of[row])
        if how.name == "first":
            if position[row] == 0:
                best[doc] = place
                totals[doc] = [float(score)]
            continue
        kept = totals.setdefault(doc, [])
        if doc not in best:
            best[doc] = place
        if len(kept) < how.n:  # rows come best first: a document's first n are its top n
            kept.append(float(score))
    ranked = [Ranked(doc, max(kept) if how.name == "max" else sum(kept), int(rows[best[doc]]))
              for doc, kept in totals.items() if doc in best]
    ranked.sort(key=lambda r: (-r.score, best[r.doc]))
    return ranked
