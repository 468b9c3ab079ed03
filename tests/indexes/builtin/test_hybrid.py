from __future__ import annotations

import pytest

from searchgrade.core.records import ScoredDoc
from searchgrade.indexes.builtin.hybrid import HybridSearcher, rrf


def ranking(*doc_ids: str) -> list[ScoredDoc]:
    return [ScoredDoc(d, 1.0 / r, r) for r, d in enumerate(doc_ids, start=1)]


def test_rrf_scores_are_sums_of_reciprocal_ranks():
    fused = rrf([ranking("a", "b", "c"), ranking("c", "a", "d")], k_const=60, depth=100)
    assert [d.doc_id for d in fused] == ["a", "c", "b", "d"]
    assert [d.rank for d in fused] == [1, 2, 3, 4]
    # a: 1/61 + 1/62; c: 1/63 + 1/61; b: 1/62; d: 1/63
    assert [d.score for d in fused] == pytest.approx([0.0325225, 0.0322665, 0.0161290, 0.0158730], abs=1e-7)


def test_rrf_with_k_zero_uses_plain_reciprocal_ranks():
    fused = rrf([ranking("x", "y"), ranking("y")], k_const=0, depth=10)
    assert [(d.doc_id, d.score) for d in fused] == [("y", pytest.approx(1.5)), ("x", pytest.approx(1.0))]


def test_rrf_ties_are_broken_by_doc_id_whatever_the_input_order():
    one = rrf([ranking("zeta", "m"), ranking("alpha", "m")], k_const=60, depth=10)
    two = rrf([ranking("alpha", "m"), ranking("zeta", "m")], k_const=60, depth=10)
    assert [d.doc_id for d in one] == [d.doc_id for d in two] == ["m", "alpha", "zeta"]
    # m: 2/62 = 0.032258 beats 1/61 = 0.016393
    assert one[0].score == pytest.approx(2 / 62)


def test_rrf_float_order_does_not_break_exact_ties():
    # p: 1/61 + 1/63 and q: 1/63 + 1/61 are equal in real arithmetic.
    # x: 2/62 = 0.0322581 ranks below both (0.0322665).
    fused = rrf([ranking("q", "x", "p"), ranking("p", "x", "q")], k_const=60, depth=10)
    assert [d.doc_id for d in fused] == ["p", "q", "x"]
    assert fused[0].score == fused[1].score


def test_rrf_only_counts_the_first_depth_results_of_each_list():
    fused = rrf([ranking("a", "b", "c"), ranking("c", "a")], k_const=60, depth=2)
    scores = {d.doc_id: d.score for d in fused}
    assert scores["c"] == pytest.approx(1 / 61)  # its rank 3 in the first list is beyond depth
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert set(scores) == {"a", "b", "c"}


def test_rrf_counts_a_repeated_doc_once_per_list():
    fused = rrf([ranking("a", "a", "b")], k_const=60, depth=10)
    assert [(d.doc_id, d.score) for d in fused] == [("a", pytest.approx(1 / 61)), ("b", pytest.approx(1 / 63))]


def test_rrf_of_nothing_is_empty():
    assert rrf([], 60, 10) == []
    assert rrf([[], []], 60, 10) == []


def test_rrf_rejects_zero_depth():
    with pytest.raises(ValueError, match="depth"):
        rrf([ranking("a")], 60, 0)


class FixedSource:
    def __init__(self, name: str, doc_ids: list[str]) -> None:
        self.name = name
        self.doc_ids = doc_ids
        self.asked: list[int] = []

    def search_one(self, query: str, k: int) -> list[ScoredDoc]:
        self.asked.append(k)
        return ranking(*self.doc_ids[:k])


def test_hybrid_searcher_fuses_fusion_depth_of_each_and_returns_k():
    ann, ft = FixedSource("ann", ["a", "b", "c", "d"]), FixedSource("fulltext", ["d", "c", "e"])
    hits = HybridSearcher(ann, ft, k_const=60, depth=3).search(["q1", "q2"], k=2)
    assert ann.asked == ft.asked == [3, 3]
    assert len(hits) == 2
    # c: 1/63 + 1/62; d: 1/62... d is beyond depth 3 in ann, so d: 1/61; a: 1/61 -> tie by id
    assert [d.doc_id for d in hits[0].docs] == ["c", "a"]
    assert hits[0].latency_s > 0
