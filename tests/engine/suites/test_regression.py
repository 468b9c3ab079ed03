"""The paired comparison of two runs of a suite: a drop, a gain, or no verdict, by the one way of the app
(engine/statistics/pairing.py), a metric where lower is better turned the right way."""

from __future__ import annotations

import pytest

from searchgrade.core.records import Document, Query
from searchgrade.engine.store import Store
from searchgrade.engine.suites.regression import compare_runs
from tests.pages.synthetic import RunSpec, write_run

N = 8
DOCS = [Document(f"d{i}", f"Doc {i}", f"Text {i}.") for i in range(1, 2 * N + 1)]
QUERIES = [Query(f"q{i}", f"query {i}") for i in range(1, N + 1)]
#: Each query's relevant document d{i}, and a non-relevant one d{N + i}.
QRELS = {f"q{i}": {f"d{i}": 3, f"d{N + i}": 0} for i in range(1, N + 1)}
GOOD = {f"q{i}": [f"d{i}", f"d{N + i}"] for i in range(1, N + 1)}
BAD = {f"q{i}": [f"d{N + i}", f"d{i}"] for i in range(1, N + 1)}


def _run(store: Store, ranking: dict[str, list[str]], name: str) -> str:
    return write_run(store, RunSpec(DOCS, QUERIES, QRELS, {"fulltext": ranking}, k=2, name=name), n_bootstrap=200)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("regression"))
    return store, _run(store, GOOD, "good"), _run(store, BAD, "bad"), _run(store, GOOD, "good again")


def test_a_drop_on_every_query_is_significant_and_lists_the_queries_that_dropped_most(runs):
    store, good, bad, _ = runs
    (change,) = compare_runs(store, good, bad, "dcg@2", 0.0)
    # DCG@2 per query: 3 at rank 1 -> 3/log2(3) = 1.893 at rank 2.
    assert change.before == pytest.approx(3.0) and change.after == pytest.approx(3 / 1.5849625, abs=1e-4)
    assert change.verdict == "drop" and change.ci_high < 0 and change.p_value < 0.05 and change.n == N
    assert len(change.dropped) == 3 and all(after < before for _, before, after in change.dropped)


def test_the_same_change_the_other_way_is_a_gain_and_no_change_has_no_verdict(runs):
    store, good, bad, again = runs
    (gain,) = compare_runs(store, bad, again, "dcg@2", 0.0)
    assert gain.verdict == "gain" and gain.ci_low > 0
    (same,) = compare_runs(store, good, again, "dcg@2", 0.0)
    assert same.verdict is None and same.change == 0.0


def test_a_margin_wider_than_the_drop_gives_no_verdict(runs):
    store, good, bad, _ = runs
    (change,) = compare_runs(store, good, bad, "dcg@2", 2.0)
    assert change.verdict is None and change.change == pytest.approx(-1.107, abs=1e-3)


def test_a_metric_where_lower_is_better_drops_when_it_rises(runs):
    store, good, bad, _ = runs
    # The relevant document is at rank 1 or 2 either way: precision@1 falls, pct_not_relevant@1 rises.
    (change,) = compare_runs(store, good, bad, "pct_not_relevant@1", 0.0)
    assert change.after > change.before and change.verdict == "drop"
