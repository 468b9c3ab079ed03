"""A run's record of its trained reranker when a resume searched some queries again."""

from __future__ import annotations

from searchgrade.indexes.rerank.trained import _record, merge_records


def test_a_resume_adds_the_queries_it_scored_to_those_scored_before():
    before = _record("r1", "run0", {"q1": "fold-1", "q2": "fold-2"}, set(), 10, 5)
    now = _record("r1", "run0", {"q3": "full"}, {"q3"}, 0, 7)
    merged = merge_records(before, now)
    assert merged["models"] == {"q1": "fold-1", "q2": "fold-2", "q3": "full"}
    assert (merged["mode"], merged["held_out"], merged["plain"]) == ("mixed", 2, 1)
    assert (merged["cache_hits"], merged["scored"]) == (10, 12)


def test_a_query_scored_again_counts_once_and_as_it_was_scored_now():
    before = _record("r1", None, {"q1": "full"}, {"q1"}, 0, 3)
    now = _record("r1", None, {"q1": "fold-2"}, set(), 0, 3)
    merged = merge_records(before, now)
    assert (merged["mode"], merged["held_out"], merged["plain"], merged["models"]) == \
        ("cross-fitted", 1, 0, {"q1": "fold-2"})


def test_another_reranker_or_no_record_before_is_replaced():
    now = _record("r2", None, {"q1": "fold-1"}, set(), 0, 1)
    assert merge_records(None, now) == now
    assert merge_records(_record("r1", None, {"q9": "full"}, {"q9"}, 0, 1), now) == now
