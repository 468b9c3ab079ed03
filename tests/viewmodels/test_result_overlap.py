"""Results panels: each pair of strategies' top-k overlap, and backend problems in words."""

from __future__ import annotations

import pytest

from searchgrade.engine.store import Store
from searchgrade.viewmodels.result_overlap import jaccard, rbo, search_problems, top_overlap
from tests.pages.synthetic import tiny_spec, write_run


def rbo_equal_length(a, b, p=0.9):
    """Webber et al. 2010, eq. 30 (lists of the same length k), written out directly."""
    k = len(a)
    x = [len(set(a[:d]) & set(b[:d])) for d in range(k + 1)]
    return x[k] / k * p ** k + (1 - p) / p * sum(x[d] / d * p ** d for d in range(1, k + 1))


def test_rbo_is_one_for_the_same_list_zero_for_disjoint_ones_and_symmetric():
    a = [f"d{i}" for i in range(10)]
    assert rbo(a, a) == pytest.approx(1.0)
    assert rbo(a, [f"x{i}" for i in range(10)]) == 0.0
    b = a[3:] + ["x1", "x2", "x3"]
    assert rbo(a, b) == pytest.approx(rbo(b, a))
    assert rbo(a, b) == pytest.approx(rbo_equal_length(a, b))
    assert rbo(a, list(reversed(a))) == pytest.approx(rbo_equal_length(a, list(reversed(a))))
    # A short list that agrees with the long one's top is extrapolated as agreeing (eq. 32).
    assert rbo(["x"], ["x", "y"]) == pytest.approx(1.0)
    assert rbo([], []) == 1.0 and rbo([], ["x"]) == 0.0
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)


def test_top_overlap_is_the_mean_over_the_queries_both_answered(tmp_path):
    store = Store(tmp_path)
    run = store.get_run(write_run(store, tiny_spec()))
    frame = top_overlap(store, run).set_index(["strategy", "other"])
    # ann vs fulltext: q1 [d3 d1 d5] / [d1 d2 d6] share d1; q2 [d4 d6 d2] / [d6 d2 d4] share all.
    row = frame.loc[("ann", "fulltext")]
    assert row["Jaccard@10"] == pytest.approx((1 / 5 + 1) / 2)
    q1 = (0.1 / 0.9) * (0.5 * 0.81 + 0.729 / 3) + 0.729 / 3
    q2 = (0.1 / 0.9) * (0.5 * 0.81 + 0.729) + 0.729
    assert row["RBO@10"] == pytest.approx((q1 + q2) / 2) and row["Queries"] == 2
    assert len(frame) == 3  # ann, fulltext, ann_rerank: three pairs


def test_failed_queries_and_ids_outside_the_collection_are_said_per_strategy(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, tiny_spec())
    with store.transaction() as con:
        con.execute("INSERT INTO failed_queries VALUES (?, 'fulltext', 'q2', 'HTTP 500', 3)", [run_id])
    store.update_run(run_id, stats={"not_in_collection": {"ann": {"results": 6, "not_in_collection": 2,
                                                                  "described": 0}}})
    lines = search_problems(store, store.get_run(run_id))
    assert lines[0].startswith("Full-text (BM25) failed on 1 of 2 queries: HTTP 500. Those queries are left out")
    assert f"searchgrade resume {run_id}" in lines[0]
    assert lines[1] == "33% of ANN (dense) results are not in the collection: check the id mapping"
