"""Held-out figures: the reranked list is the base's top depth by score, compared per query."""

from __future__ import annotations

import pytest

from searchgrade.engine.training.heldout import heldout_figures, rerank


def test_rerank_orders_the_top_depth_by_score_and_keeps_base_order_on_ties():
    ranked = ["a", "b", "c", "d", "e"]
    scores = {"a": 0.1, "b": 0.9, "c": 0.9, "d": 5.0, "e": 9.0}
    assert rerank(ranked, scores, depth=4, k=3) == ["d", "b", "c"]  # e is below the depth


def test_rerank_takes_k_candidates_when_k_is_deeper_than_depth():
    assert rerank(["a", "b", "c"], {"a": 0, "b": 1, "c": 2}, depth=1, k=3) == ["c", "b", "a"]


def test_a_reranker_that_lifts_the_relevant_document_shows_as_a_gain():
    # two queries; the relevant document is at rank 3 in the base and first after reranking
    candidates = {"bm25": {"q1": ["x", "y", "r1"], "q2": ["u", "v", "r2"]}}
    scores = {"q1": {"x": 0, "y": 0, "r1": 1}, "q2": {"u": 0, "v": 0, "r2": 1}}
    judgments = {"q1": {"r1": 1}, "q2": {"r2": 1}}
    figures, per_query = heldout_figures(candidates, scores, judgments, 1, depth=3, k=3,
                                         n_resamples=100)
    ndcg = next(f for f in figures if f.metric == "ndcg")
    assert ndcg.base == pytest.approx(0.5)  # 1 / log2(4)
    assert ndcg.reranked == pytest.approx(1.0)
    assert (ndcg.n, ndcg.improved, ndcg.hurt) == (2, 2, 0)
    assert per_query["bm25"]["q1"] == {"base:ndcg": pytest.approx(0.5), "reranked:ndcg": 1.0,
                                       "base:dcg": pytest.approx(0.5), "reranked:dcg": 1.0}


def test_only_queries_with_scores_are_evaluated_and_the_interval_is_adjusted_over_strategies():
    lists = {"q1": ["r", "x"], "q2": ["x", "r"], "q3": ["r", "x"]}
    candidates = {"a": lists, "b": lists}
    scores = {"q1": {"r": 1, "x": 0}, "q2": {"r": 1, "x": 0}}  # q3 not held out
    figures, per_query = heldout_figures(candidates, scores, {q: {"r": 1} for q in lists}, 1, depth=2,
                                         k=2, metrics=("ndcg",), n_resamples=100)
    assert [f.n for f in figures] == [2, 2]
    # One family of two comparisons: the one procedure's figures, each adjusted for m = 2.
    from searchgrade.engine.statistics.paired import paired_differences
    pairs = [([row["reranked:ndcg"] for row in per_query[s].values()],
              [row["base:ndcg"] for row in per_query[s].values()]) for s in ("a", "b")]
    expected = paired_differences(pairs, n_resamples=100)
    assert expected[0].m == 2
    assert [(f.m, f.diff, f.p_value) for f in figures] == [(d.m, d.diff, d.p_value) for d in expected]
    assert all(f.significant == d.significant for f, d in zip(figures, expected, strict=True))
