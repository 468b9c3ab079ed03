"""Training pairs: graded labels as soft targets, hard negatives from the chosen ranks, seeded."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.training.pairs import (
    NegativeSampling,
    QueryLabels,
    hard_negatives,
    label_value,
    labels_from_grades,
    training_pairs,
)

CONTENTS = {f"d{i}": f"document {i}" for i in range(60)}


def test_human_grades_win_over_llm_grades_and_failures_are_no_label():
    queries = [{"query_id": "q1", "text": "t", "source_doc_id": None}]
    grades = [
        {"query_id": "q1", "doc_id": "d1", "grade": 0, "source": "llm"},
        {"query_id": "q1", "doc_id": "d1", "grade": 3, "source": "human"},
        {"query_id": "q1", "doc_id": "d2", "grade": None, "source": "llm"},
        {"query_id": "q1", "doc_id": "d3", "grade": 2, "source": "llm"},
        {"query_id": "other", "doc_id": "d4", "grade": 1, "source": "human"},
    ]
    (labels,) = labels_from_grades(queries, grades)
    assert labels.grades == {"d1": 3, "d3": 2}
    assert labels.sources == {"d1": "human", "d3": "llm"}
    assert labels.failed == {"d2"}


def test_labels_are_grade_over_the_top_grade_clamped():
    assert label_value(3, 3) == 1.0
    assert label_value(1, 4) == 0.25
    assert label_value(-2, 3) == 0.0
    with pytest.raises(SearchGradeError):
        label_value(1, 0)


def test_negatives_come_only_from_the_chosen_ranks_and_skip_labelled_and_failed():
    query = QueryLabels("q1", "t", grades={"d12": 1}, failed={"d13"})
    ranked = [f"d{i}" for i in range(1, 31)]  # rank r holds d{r}
    drawn = hard_negatives(query, [ranked], NegativeSampling(100, 11, 20), seed=0)
    assert sorted(drawn, key=lambda d: int(d[1:])) == [f"d{r}" for r in range(11, 21) if r not in (12, 13)]


def test_negatives_are_seeded_per_query_and_do_not_depend_on_list_order():
    query = QueryLabels("q1", "t")
    a = [f"d{i}" for i in range(1, 51)]
    b = [f"d{i}" for i in range(50, 0, -1)]
    sampling = NegativeSampling(5, 1, 50)
    assert hard_negatives(query, [a, b], sampling, seed=0) == hard_negatives(query, [b, a], sampling, seed=0)
    assert hard_negatives(query, [a], sampling, seed=0) != hard_negatives(query, [a], sampling, seed=1)


def test_pairs_hold_every_graded_document_then_the_negatives():
    query = QueryLabels("q1", "the query", grades={"d1": 3, "d2": 0}, sources={"d1": "human", "d2": "llm"})
    ranked = [f"d{i}" for i in range(1, 40)]
    pairs, stats = training_pairs([query], {"q1": [ranked]}, CONTENTS, 3, NegativeSampling(4, 11, 50), 0)
    assert pairs[:2] == [("the query", "document 1", 1.0), ("the query", "document 2", 0.0)]
    assert [p.label for p in pairs[2:]] == [0.0] * 4
    assert (stats.positives, stats.judged_negatives, stats.hard_negatives, stats.pairs) == (1, 1, 4, 6)
    assert stats.by_source == {"human": 1, "llm": 1}


def test_graded_documents_no_longer_in_the_collection_are_skipped_and_counted():
    query = QueryLabels("q1", "t", grades={"gone": 2, "d1": 2})
    pairs, stats = training_pairs([query], {}, CONTENTS, 2, NegativeSampling(0), 0)
    assert len(pairs) == 1 and stats.skipped_missing_documents == 1


@pytest.mark.parametrize("first,last", [(0, 10), (20, 10)])
def test_bad_negative_ranks_name_the_option(first, last):
    with pytest.raises(SearchGradeError, match="--negative-ranks"):
        NegativeSampling(4, first, last)
