"""A document's score from its retrieved chunks: max, the sum of its top n, its first chunk."""

from __future__ import annotations

from searchgrade.indexes.chunking.aggregate import Aggregate, aggregate

# Chunks 0-1 of document 0, 2-4 of document 1, 5 of document 2 (positions within each document).
DOC_OF = [0, 0, 1, 1, 1, 2]
POSITION = [0, 1, 0, 1, 2, 0]
# A chunk ranking, best first: chunk 3 (doc 1), 0 (doc 0), 4 (doc 1), 5 (doc 2), 1 (doc 0).
ROWS = [3, 0, 4, 5, 1]
SCORES = [0.9, 0.8, 0.7, 0.5, 0.4]


def test_max_ranks_each_document_where_its_best_chunk_is():
    ranked = aggregate(ROWS, SCORES, DOC_OF, POSITION, Aggregate("max"))
    assert [(r.doc, r.score, r.chunk) for r in ranked] == [(1, 0.9, 3), (0, 0.8, 0), (2, 0.5, 5)]


def test_sum_of_the_top_two_adds_a_documents_two_best_retrieved_chunks():
    ranked = aggregate(ROWS, SCORES, DOC_OF, POSITION, Aggregate("sum_top", 2))
    assert [r.doc for r in ranked] == [1, 0, 2]
    assert [round(r.score, 6) for r in ranked] == [1.6, 1.2, 0.5]  # 0.9+0.7, 0.8+0.4, 0.5 alone
    assert [r.chunk for r in ranked] == [3, 0, 5]  # the matched chunk is the best one


def test_first_ranks_only_documents_whose_first_chunk_was_retrieved_by_it():
    ranked = aggregate(ROWS, SCORES, DOC_OF, POSITION, Aggregate("first"))
    # Document 1's first chunk (2) was not retrieved: it is not ranked, however good its other chunks.
    assert [(r.doc, r.score, r.chunk) for r in ranked] == [(0, 0.8, 0), (2, 0.5, 5)]


def test_equal_scores_rank_in_the_order_of_the_documents_best_chunks():
    ranked = aggregate([5, 0], [0.5, 0.5], DOC_OF, POSITION, Aggregate("max"))
    assert [r.doc for r in ranked] == [2, 0]
