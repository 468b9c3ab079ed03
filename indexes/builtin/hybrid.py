"""Hybrid: the fusion of the ANN and full-text rankings (RRF by default; indexes/builtin/fusion.py
has every method: weighted RRF, CombSUM, CombMNZ, a convex combination)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from searchgrade.core.checks import check_k
from searchgrade.core.records import ScoredDoc, SearchHits
from searchgrade.indexes.base import CandidateSource, Found, Outcome, QueryBatch, answer_each, search_each
from searchgrade.indexes.builtin.fusion import Fusion, fuse


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
    return fuse(lists, Fusion("rrf", rrf_k=k_const, depth=depth))


def _fusion(fusion: Fusion | None, k_const: float, depth: int) -> Fusion:
    return fusion if fusion is not None else Fusion("rrf", rrf_k=k_const, depth=depth)


class HybridSearcher:
    """The fusion of the ANN and full-text searchers' top lists; latency covers both and the fusion."""

    def __init__(self, ann: CandidateSource, fulltext: CandidateSource, k_const: float = 60,
                 depth: int = 100, name: str = "hybrid", fusion: Fusion | None = None) -> None:
        self.name = name
        self.ann = ann
        self.fulltext = fulltext
        self.fusion = _fusion(fusion, k_const, depth)

    def search_one(self, query: str, k: int) -> list[ScoredDoc]:
        check_k(k)
        depths = self.fusion.list_depths(2)
        lists = [self.ann.search_one(query, depths[0]), self.fulltext.search_one(query, depths[1])]
        return fuse(lists, self.fusion)[:k]

    def search(self, queries: Sequence[str], k: int) -> list[SearchHits]:
        return search_each(self.search_one, queries, k)


class HybridNode:
    """Hybrid as an executor node: the fusion of its ``inputs``' answers (``ann`` and ``fulltext``
    for the built-in), which the executor computed once for every strategy. Its own seconds are
    the fusion's; its latency adds its inputs'."""

    def __init__(self, inputs: tuple[str, ...] = ("ann", "fulltext"), k_const: float = 60,
                 depth: int = 100, name: str = "hybrid", fusion: Fusion | None = None) -> None:
        self.name = name
        self.inputs = tuple(inputs)
        self.fusion = _fusion(fusion, k_const, depth)
        self.fusion.list_depths(len(self.inputs))  # a wrong number of depths or weights stops here
        self.fusion.list_weights(len(self.inputs))

    def input_depth(self, depth: int) -> int:  # noqa: ARG002 - the node contract's signature
        return self.fusion.max_depth

    def answer(self, batch: QueryBatch, depth: int, inputs: Mapping[str, Sequence[Outcome]]) -> list[Outcome]:
        # The executor passes only queries every input answered (a failed input fails this node).
        return answer_each(range(len(batch)), lambda i: Found(
            fuse([inputs[name][i].docs for name in self.inputs], self.fusion)[:depth]))
