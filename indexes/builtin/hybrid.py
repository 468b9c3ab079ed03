"""Hybrid: reciprocal rank fusion (RRF) of the ANN and full-text rankings."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from searchgrade.core.checks import check_k
from searchgrade.core.records import ScoredDoc, SearchHits
from searchgrade.indexes.base import CandidateSource, search_each


def rrf(lists: Sequence[Sequence[ScoredDoc]], k_const: float = 60, depth: int = 100) -> list[ScoredDoc]:
    """Fuse ranked lists by reciprocal rank: score(d) = sum over lists of 1 / (k_const + rank_d).

    Only the first ``depth`` entries of each list take part; rank is the 1-based position in the
    list (a list is assumed best first). A document absent from a list gets nothing from it; a
    document repeated within one list counts once, at its best position. Equal fused scores are
    ordered by doc id, so the result never depends on hash or input order.

    Example: lists [a, b] and [b, c] with k_const = 60 give b = 1/62 + 1/61 = 0.03252,
    a = 1/61 = 0.01639, c = 1/62 = 0.01613, so [b, a, c].

    Returns:
        Every document of the truncated lists, best first, ranks 1..n. Empty lists -> [].
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    fused: dict[str, float] = {}
    for ranking in lists:
        seen: set[str] = set()
        for position, doc in enumerate(ranking[:depth], start=1):
            if doc.doc_id in seen:
                continue
            seen.add(doc.doc_id)
            fused[doc.doc_id] = fused.get(doc.doc_id, 0.0) + 1.0 / (k_const + position)
    # Rounding keeps float noise (1/61 + 1/63 vs 1/63 + 1/61 summed in another order) from
    # breaking ties that are exact in real arithmetic.
    order = sorted(fused, key=lambda doc_id: (-round(fused[doc_id], 12), doc_id))
    return [ScoredDoc(doc_id, fused[doc_id], rank) for rank, doc_id in enumerate(order, start=1)]


class HybridSearcher:
    """RRF of the top ``depth`` of the ANN and full-text searchers; latency covers both and the fusion."""

    def __init__(self, ann: CandidateSource, fulltext: CandidateSource, k_const: float = 60,
                 depth: int = 100, name: str = "hybrid") -> None:
        self.name = name
        self.ann = ann
        self.fulltext = fulltext
        self.k_const = k_const
        self.depth = depth

    def search_one(self, query: str, k: int) -> list[ScoredDoc]:
        check_k(k)
        lists = [self.ann.search_one(query, self.depth), self.fulltext.search_one(query, self.depth)]
        return rrf(lists, self.k_const, self.depth)[:k]

    def search(self, queries: Sequence[str], k: int) -> list[SearchHits]:
        return search_each(self.search_one, queries, k)


class HybridNode:
    """Hybrid as an executor node: RRF of the ``ann`` and ``fulltext`` answers the executor computed
    once for every strategy. Its own seconds are the fusion's; its latency adds both inputs'."""

    def __init__(self, inputs: tuple[str, str] = ("ann", "fulltext"), k_const: float = 60,
                 depth: int = 100, name: str = "hybrid") -> None:
        self.name = name
        self.inputs = inputs
        self.k_const = k_const
        self.depth = depth

    def input_depth(self, depth: int) -> int:
        return self.depth

    def answer(self, batch: Any, depth: int, inputs: Mapping[str, Sequence[Any]]) -> list[Any]:
        from searchgrade.indexes.executor import Answer

        out = []
        for i in range(len(batch)):
            start = time.perf_counter()
            docs = rrf([inputs[name][i].docs for name in self.inputs], self.k_const, self.depth)[:depth]
            out.append(Answer(docs, time.perf_counter() - start))
        return out
