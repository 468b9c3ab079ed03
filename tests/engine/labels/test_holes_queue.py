"""The "fill the holes" queue: the unjudged pairs that could change which strategy leads, most
decisive first, and how many of them settle it."""

from __future__ import annotations

import math

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.labels.holes_queue import build_queue, holes_queue, queue_text
from searchgrade.engine.store import Store
from searchgrade.viewmodels import review as review_model
from tests.engine.holes_fixtures import K, holey_spec
from tests.pages.synthetic import tiny_spec, write_run


def test_one_query_by_hand():
    # A leads with a grade-3 result at rank 1 (DCG 3); B's ranks 1 and 2 are holes. At the top grade
    # they could add 3 and 3/log2(3) = 1.89 to B: 4.89 >= the lead of 3, so the holes could reverse it.
    ranks = {"a": {"q": {"x": 1}}, "b": {"q": {"h1": 1, "h2": 2}}}
    queue = build_queue(ranks, {"a": 3.0, "b": 0.0}, {("q", "h1"), ("q", "h2")}, {"a": 1, "b": 1}, 10, 3)
    [c] = queue.comparisons
    assert (c.leader, c.other, c.lead, c.holes) == ("a", "b", 3.0, 2)
    assert c.threat == pytest.approx(3 + 3 / math.log2(3)) and c.open
    assert [(i.doc_id, i.rank) for i in queue.items] == [("h1", 1), ("h2", 2)]
    assert queue.items[0].priority == pytest.approx(1.0)  # rank 1 alone could erase the whole lead
    # Rated not relevant, h1 leaves 1.89 < 3: one pair settles it.
    assert queue.settle == 1


def test_a_hole_both_strategies_rank_threatens_by_the_difference_of_its_places():
    ranks = {"a": {"q": {"x": 1, "h": 3}}, "b": {"q": {"h": 1}}}
    queue = build_queue(ranks, {"a": 3.0, "b": 0.0}, {("q", "h")}, {"a": 1, "b": 1}, 10, 3)
    assert queue.comparisons[0].threat == pytest.approx(3 * (1 - 1 / math.log2(4)))
    assert not queue.comparisons[0].open and queue.settle == 0 and not queue.items
    assert "nothing to settle" in queue_text(queue)[0]


def test_the_holey_runs_queue_holds_anns_holes_and_settles_before_its_end(tmp_path):
    spec, _ = holey_spec()
    store = Store(tmp_path)
    run_id = write_run(store, spec, n_bootstrap=50)
    queue = holes_queue(store, run_id, K)
    assert queue.leader == "fulltext"
    [c] = queue.comparisons
    assert c.other == "ann" and c.open and c.holes == 7 * len(spec.queries)
    assert {(i.query_id, i.doc_id) for i in queue.items} == {
        (q, d) for q, docs in spec.rankings["ann"].items() for d in docs if d not in spec.qrels[q]}
    assert [i.rank for i in queue.items[:len(spec.queries)]] == [1] * len(spec.queries)  # the top first
    # The settle count is the first place where what is left could no longer reverse the lead.
    remaining = c.threat - sum(3 / math.log2(i.rank + 1) / len(spec.queries) for i in queue.items[:queue.settle])
    before = remaining + 3 / math.log2(queue.items[queue.settle - 1].rank + 1) / len(spec.queries)
    assert remaining < c.lead <= before
    assert 0 < queue.settle < len(queue.items)
    lines = queue_text(queue, {"ann": "ANN", "fulltext": "Full-text"})
    assert lines[0].startswith("Full-text leads ANN on DCG@10 by ") and "could reverse it" in lines[0]
    assert f"Rating the first {queue.settle} of these {len(queue.items)} pairs settles it" in lines[1]


def test_a_review_queue_of_the_holes_takes_the_settling_pairs_in_order(tmp_path):
    spec, _ = holey_spec(n_queries=10)
    store = Store(tmp_path)
    run_id = write_run(store, spec, n_bootstrap=50)
    queue = holes_queue(store, run_id, K)
    queue_id = review_model.create_queue(store, run_id, mode="holes", size=queue.settle, k=K)
    items = store.review_items(queue_id)
    assert [(i["query_id"], i["doc_id"]) for i in items] == [(i.query_id, i.doc_id) for i in queue.items[:queue.settle]]
    assert items[0]["stratum"] == "holes · ann rank 1"
    [choice] = review_model.queue_choices(store, run_id)
    assert choice.label.startswith(f"{queue.settle} unjudged results in the top 10 (fill the holes)")


def test_a_run_without_a_hole_has_no_queue(tmp_path):
    spec = tiny_spec()
    spec.qrels["q1"].update({"d5": 0, "d6": 0})
    spec.qrels["q2"].update({"d6": 0})
    store = Store(tmp_path)
    run_id = write_run(store, spec)
    with pytest.raises(SearchGradeError, match="no hole to fill"):
        review_model.create_queue(store, run_id, mode="holes", size=5, k=3)
