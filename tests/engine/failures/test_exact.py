"""The run-time evidence of lost_by_index (engine/failures/exact.py): an exact search of the same
vectors as the approximate index, for the failed queries only, checked against numpy's brute force."""

from __future__ import annotations

import numpy as np

from searchgrade.core.records import Query, ScoredDoc, SearchHits
from searchgrade.engine.failures.exact import failing_queries, run_evidence
from searchgrade.indexes.builtin.ann import AnnSearcher, build_ann_index
from searchgrade.indexes.settings import IndexSettings


class TableModel:
    """An embedding model that looks each query's vector up (the searcher calls ``encode``)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.calls = 0

    def encode(self, texts, **_kwargs) -> np.ndarray:
        self.calls += 1
        return np.stack([self.vectors[t] for t in texts])


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_exact_search_finds_what_a_one_probe_ivf_index_misses_and_matches_brute_force():
    rng = np.random.default_rng(0)
    docs = _unit(rng.normal(size=(900, 16)))
    queries = [Query(f"q{i}", f"query {i}") for i in range(40)]
    vectors = {q.text: v for q, v in zip(queries, _unit(rng.normal(size=(40, 16))), strict=True)}
    index = build_ann_index(docs, IndexSettings(ann_index="ivf", ivf_nprobe=1))
    ann = AnnSearcher(TableModel(vectors), index, [f"d{i}" for i in range(900)])
    failing = [q.query_id for q in queries[::2]]
    evidence = run_evidence(ann, queries, 10, ["ann", "hybrid"], failing)
    assert evidence.stats["index"] == "ivf" and evidence.stats["queries"] == 20
    assert evidence.stats["strategies"] == ["ann", "hybrid"]
    assert evidence.query_ids == [q.query_id for q in queries] and evidence.vectors.shape == (40, 16)
    by_query: dict[str, list[tuple[int, str, bool]]] = {}
    for qid, rank, doc_id, in_index in evidence.exact_rows:
        by_query.setdefault(qid, []).append((rank, doc_id, in_index))
    assert sorted(by_query) == sorted(failing)  # exact search for the failed queries only
    missed = 0
    for q in queries[::2]:
        scores = docs @ vectors[q.text]
        exact = [f"d{i}" for i in np.argsort(-scores, kind="stable")[:10]]
        approximate = {d.doc_id for d in ann.search_vectors(vectors[q.text][None, :], 10)[0]}
        assert [d for _, d, _ in by_query[q.query_id]] == exact
        assert [flag for _, d, flag in by_query[q.query_id]] == [d in approximate for d in exact]
        missed += sum(not flag for _, _, flag in by_query[q.query_id])
    assert missed > 0  # one probe of 30 lists misses most of the exact top 10


def test_the_vectors_the_search_embedded_are_reused_not_embedded_again():
    rng = np.random.default_rng(1)
    docs = _unit(rng.normal(size=(50, 8)))
    queries = [Query(f"q{i}", f"query {i}") for i in range(5)]
    model = TableModel({q.text: v for q, v in zip(queries, _unit(rng.normal(size=(5, 8))), strict=True)})
    ann = AnnSearcher(model, build_ann_index(docs, IndexSettings(ann_index="flat")), [f"d{i}" for i in range(50)])
    ann.keep_query_vectors([q.text for q in queries], model.encode([q.text for q in queries]))
    calls = model.calls
    evidence = run_evidence(ann, queries, 5, ["ann"], ["q1"])
    assert model.calls == calls  # nothing embedded twice
    # An exact (flat) index loses nothing: no exact search is made.
    assert evidence.exact_rows == [] and evidence.stats["exact"] is True and evidence.stats["queries"] == 0


def test_only_queries_a_relevant_document_could_explain_are_searched_again():
    hits = {"ann": [SearchHits([ScoredDoc("d1", 1.0, 1)], 0.0), SearchHits([ScoredDoc("d2", 1.0, 1)], 0.0),
                    None, SearchHits([ScoredDoc("d5", 1.0, 1)], 0.0), SearchHits([ScoredDoc("d6", 1.0, 1)], 0.0)],
            "fulltext": [SearchHits([ScoredDoc("d9", 1.0, 1)], 0.0)] * 5}
    judgments = {"q0": {"d1": 2}, "q1": {"d2": 1, "d3": 2}, "q2": {"d4": 2}, "q3": {"d5": 1}, "q4": {"d7": 2}}
    failed = {"q4": {"d6"}}  # q4's top judgment failed: not a failed query
    # q0: ann's top relevant; q1: fails, d3 relevant; q2: ann failed to answer; q3: nothing relevant known.
    assert failing_queries(hits, ["q0", "q1", "q2", "q3", "q4"], judgments, failed, 2, ["ann"]) == ["q1"]
