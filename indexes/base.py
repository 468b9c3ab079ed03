"""The searcher interface, the result of a build, and timing helpers."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from searchgrade.core.checks import check_k
from searchgrade.core.records import ScoredDoc, SearchHits

#: progress(stage, done, total), e.g. progress("embed", 64, 5183).
ProgressFn = Callable[[str, int, int], None]


@runtime_checkable
class Searcher(Protocol):
    """One retrieval strategy, ready to answer queries."""

    name: str  # strategy id (indexes.registry)

    def search(self, queries: Sequence[str], k: int) -> list[SearchHits]:
        """Top k for each query, in query order, each with its own latency."""
        ...


@runtime_checkable
class CandidateSource(Protocol):
    """A searcher that can also answer one query untimed (what hybrid and rerank build on)."""

    name: str

    def search_one(self, query: str, k: int) -> list[ScoredDoc]: ...


@dataclass
class BuiltIndexes:
    """What build_searchers made.

    Attributes:
        searchers: strategy id -> ready searcher, in the order of the strategies requested.
        nodes: what indexes.executor.Executor runs: every strategy once per query, shared.
        skipped: strategy id -> one-line reason with the fix (e.g. the reranker cannot be loaded).
        timings: stage -> seconds ("embedder_load", "embed", "ann_build", "bm25_build",
            "reranker_load").
        stats: counts and rates, e.g. embedded, cache_hits, embed_docs_per_s, ann_reused.
        artifacts: artifact name -> directory it lives in.
        ann: the ANN searcher (indexes.builtin.ann.AnnSearcher) when a requested strategy uses it, for
            measuring what its index loses against exact search.
    """

    searchers: dict[str, Searcher] = field(default_factory=dict)
    #: node name -> executor node (indexes.executor): the requested strategies and their inputs.
    nodes: dict[str, Any] = field(default_factory=dict)
    #: The indexes.build.BuildContext the nodes came from (its shared components).
    context: Any = None
    skipped: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    ann: Any = None
    #: strategy -> its index's cost figures (indexes/variants/costs.py ``strategy_costs``).
    costs: dict[str, dict[str, Any]] = field(default_factory=dict)


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Add the seconds spent in the block to ``timings[stage]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


def search_each(search_one: Callable[[str, int], list[ScoredDoc]], queries: Sequence[str],
                k: int) -> list[SearchHits]:
    """Answer queries one at a time, timing each one separately (as a user would see it)."""
    check_k(k)
    if isinstance(queries, str):
        raise TypeError("queries must be a sequence of strings, not one string")
    hits = []
    for query in queries:
        start = time.perf_counter()
        docs = search_one(query, k)
        hits.append(SearchHits(docs, time.perf_counter() - start))
    return hits


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Row indices of the k highest scores, best first; equal scores in index order.

    Uses argpartition, so the cost is O(n + k log k) rather than a full sort.
    """
    n = len(scores)
    if k < n:
        candidates = np.argpartition(-scores, k - 1)[:k]
        # A score equal to the k-th may sit outside the partition; include all of them
        # so the tie-break by index is exact.
        kth = scores[candidates].min()
        candidates = np.union1d(candidates, np.flatnonzero(scores >= kth))
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k]


def ranked(doc_ids: Sequence[str], rows: Sequence[int], scores: Sequence[float]) -> list[ScoredDoc]:
    """ScoredDocs with ranks 1..n for rows already in rank order."""
    return [
        ScoredDoc(doc_ids[int(row)], float(score), rank)
        for rank, (row, score) in enumerate(zip(rows, scores, strict=True), start=1)
    ]
