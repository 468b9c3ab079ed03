"""Query-disjoint folds: leaking queries share a fold; folds are balanced and seeded."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.training.folds import FoldQuery, assign_folds, query_groups


def _generated(n_docs: int, per_doc: int) -> list[FoldQuery]:
    return [FoldQuery(f"g-d{d}-n{i}", f"question {i} about document {d}", f"d{d}")
            for d in range(n_docs) for i in range(per_doc)]


def test_queries_from_one_source_document_share_a_fold():
    queries = _generated(10, 3)
    folds = assign_folds(queries, 5, seed=0)
    for d in range(10):
        assert len({folds[f"g-d{d}-n{i}"] for i in range(3)}) == 1


def test_queries_with_the_same_text_share_a_group_across_source_documents():
    queries = [FoldQuery("a", "What is BM25?", "d1"), FoldQuery("b", "what is  bm25", "d2"),
               FoldQuery("c", "something else", "d2"), FoldQuery("d", "unrelated", "d3")]
    groups = query_groups(queries)
    # a ~ b by text, b ~ c by source document: one group of three
    assert groups["a"] == groups["b"] == groups["c"] != groups["d"]


def test_folds_are_balanced_and_cover_every_fold():
    folds = assign_folds(_generated(23, 1), 5, seed=3)
    sizes = sorted(list(folds.values()).count(f) for f in range(1, 6))
    assert sizes == [4, 4, 5, 5, 5]


def test_folds_follow_the_seed():
    queries = _generated(30, 2)
    assert assign_folds(queries, 5, seed=1) == assign_folds(queries, 5, seed=1)
    assert assign_folds(queries, 5, seed=1) != assign_folds(queries, 5, seed=2)


def test_too_few_groups_for_the_folds_names_the_fix():
    with pytest.raises(SearchGradeError, match="only 3 independent groups.*--folds 3"):
        assign_folds(_generated(3, 4), 5)


def test_fewer_than_two_folds_is_refused():
    with pytest.raises(SearchGradeError, match="at least 2"):
        assign_folds(_generated(5, 1), 1)


def test_a_query_id_twice_is_refused():
    with pytest.raises(SearchGradeError, match="appears twice"):
        query_groups([FoldQuery("q", "a"), FoldQuery("q", "b")])
