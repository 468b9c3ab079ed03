"""What a run measures for its failure diagnosis while its indexes are loaded: the queries' vectors
(from the ANN's embedding model: the failure groups and their map), and an exact search of the
same vectors for the queries an ANN-based strategy failed on (lost_by_index's evidence).

Exact search runs for the failed queries only, and only where the index is approximate (IVF,
HNSW): an exact (flat) index loses nothing. It compares the exact top list of the run's depth
with the approximate index's top list of the same depth, over the same vectors.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from searchgrade.core.records import Query, SearchHits

#: Query vectors are embedded in batches of this many.
BATCH_SIZE = 32


@dataclass
class RunEvidence:
    """What the run stores for its diagnosis (engine/store/failures.py)."""

    query_ids: list[str] = field(default_factory=list)
    #: One row per query of ``query_ids`` (none when the run has no ANN).
    vectors: np.ndarray | None = None
    #: (query_id, rank, doc_id, in_index): each checked query's exact top list.
    exact_rows: list[tuple[str, int, str, bool]] = field(default_factory=list)
    #: For the run's stats ("exact_search"): the index, its strategies, the queries checked, seconds.
    stats: dict[str, Any] = field(default_factory=dict)


def failing_queries(hits: Mapping[str, Sequence[SearchHits | None]], query_ids: Sequence[str],
                    judgments: Mapping[str, Mapping[str, int]], failed: Mapping[str, set[str]],
                    threshold: int, strategies: Sequence[str]) -> list[str]:
    """The queries, in run order, that some of ``strategies`` answered with a top 1 that is not
    relevant (graded below the threshold or unjudged; not one whose judgment failed) while a
    relevant document is known for them: the only ones exact search can explain."""
    out = []
    unanswered = [None] * len(query_ids)
    for i, qid in enumerate(query_ids):
        judged = judgments.get(qid, {})
        if not any(g >= threshold for g in judged.values()):
            continue
        for strategy in strategies:
            h = hits.get(strategy, unanswered)[i]
            if h is None or not h.docs:
                continue
            top = h.docs[0].doc_id
            if top in failed.get(qid, set()):
                continue
            if judged.get(top, 0) < threshold:
                out.append(qid)
                break
    return out


def run_evidence(ann: Any, queries: Sequence[Query], depth: int, index_strategies: Sequence[str],
                 failing: Sequence[str]) -> RunEvidence:
    """The run's query vectors, and the exact search of ``failing`` (query ids) when the index is
    approximate.

    Args:
        ann: the run's ANN searcher (indexes.builtin.ann.AnnSearcher): its embedding model, its
            index and the vectors it holds.
        depth: the depth of the lists compared (the run's).
        index_strategies: the run's strategies that search this index (lost_by_index applies to them).
        failing: the queries to search exactly (``failing_queries``).
    """
    start = time.perf_counter()
    ids = [q.query_id for q in queries]
    # The vectors the search embedded, kept by the searcher (a search on Ray actors kept none here).
    vectors = ann.query_vectors([q.text for q in queries], batch_size=BATCH_SIZE) if queries else None
    evidence = RunEvidence(ids, vectors)
    kind = ann.kind
    stats: dict[str, Any] = {"index": kind, "strategies": list(index_strategies), "depth": depth, "queries": 0}
    if kind == "flat":
        stats["exact"] = True
    elif failing and index_strategies and vectors is not None:
        row_of = {qid: i for i, qid in enumerate(ids)}
        chosen = np.ascontiguousarray(vectors[[row_of[q] for q in failing]])
        approximate = ann.search_vectors(chosen, depth)
        exact = ann.exact_search(chosen, depth)
        for qid, found, rows in zip(failing, approximate, exact, strict=True):
            kept = {d.doc_id for d in found}
            ranked = [ann.doc_ids[int(r)] for r in rows if r >= 0]
            evidence.exact_rows.extend((qid, rank, doc_id, doc_id in kept)
                                       for rank, doc_id in enumerate(ranked, start=1))
        stats["queries"] = len(failing)
    stats["seconds"] = round(time.perf_counter() - start, 3)
    evidence.stats = stats
    return evidence
