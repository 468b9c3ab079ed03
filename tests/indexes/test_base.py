from __future__ import annotations

import numpy as np
import pytest

from searchgrade.core.records import ScoredDoc
from searchgrade.indexes.base import search_each, timed, top_k


def test_top_k_orders_by_score_then_row():
    scores = np.array([0.5, 2.0, 0.5, 3.0, 0.5, -1.0])
    assert top_k(scores, 3).tolist() == [3, 1, 0]
    assert top_k(scores, 4).tolist() == [3, 1, 0, 2]  # ties at 0.5 in row order
    assert top_k(scores, 10).tolist() == [3, 1, 0, 2, 4, 5]


def test_top_k_matches_a_full_stable_sort_on_random_ties():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=200).astype(float)
    expected = np.argsort(-scores, kind="stable")
    for k in (1, 7, 50, 199, 200):
        assert top_k(scores, k).tolist() == expected[:k].tolist()


def test_search_each_times_every_query_separately():
    def one(query: str, k: int) -> list[ScoredDoc]:
        return [ScoredDoc(query, 1.0, 1)][:k]

    hits = search_each(one, ["a", "b"], 5)
    assert [h.docs[0].doc_id for h in hits] == ["a", "b"]
    assert all(h.latency_s > 0 for h in hits)


@pytest.mark.parametrize("k", [0, -1, 2.0, True])
def test_search_each_rejects_k_below_one_or_not_whole(k):
    with pytest.raises(ValueError, match="k must be"):
        search_each(lambda q, k: [], ["a"], k)


def test_search_each_rejects_one_string_as_queries():
    with pytest.raises(TypeError, match="sequence of strings"):
        search_each(lambda q, k: [], "abc", 1)


def test_timed_accumulates_per_stage():
    timings: dict[str, float] = {}
    with timed(timings, "x"):
        pass
    first = timings["x"]
    with timed(timings, "x"):
        pass
    assert timings["x"] >= first > 0
