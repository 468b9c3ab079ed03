"""A complete run's Results paired tests are computed once and kept: the kept ones are the ones a
fresh computation gives, a run not complete is never served kept tests, and clearing a run's
contents (a re-grade) forgets them."""

from __future__ import annotations

import pytest

from searchgrade.engine.store import Store
from searchgrade.viewmodels.common import PRIMARY_METRIC, metric_rows
from searchgrade.viewmodels.recompute import Figures
from searchgrade.viewmodels.results import results_view
from searchgrade.viewmodels.significance import decode_tests, holes_input, paired_comparisons, results_pairs
from tests.pages.synthetic import random_spec, write_run


def _fresh(store: Store, run_id: str, metric: str, k: int):
    run = store.get_run(run_id)
    figures = Figures(store, run, k)
    selected = metric_rows(figures.summary(), metric)
    wide = figures.wide(metric)
    holes = holes_input(store, run, metric, k)
    return paired_comparisons(wide, results_pairs(selected, metric, wide), holes)


def _same(kept, fresh) -> bool:
    """Equal tests, and the same comparisons condensed and withheld (with the same reasons)."""
    return (kept == fresh and kept.condensed == fresh.condensed and kept.withheld == fresh.withheld
            and kept.judged == fresh.judged)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("kept"))
    return store, write_run(store, random_spec(60, n_docs=400, seed=4), n_bootstrap=200)


def test_a_completed_run_keeps_its_headline_tests_equal_to_a_fresh_computation(run):
    store, run_id = run
    k = store.get_run(run_id).k
    kept = store.stored_paired_tests(run_id, PRIMARY_METRIC, k)
    assert kept is not None  # written when the run completed
    assert _same(decode_tests(kept), _fresh(store, run_id, PRIMARY_METRIC, k))  # exact, not approximate
    view = results_view(store, run_id, PRIMARY_METRIC, k)
    assert not view.reranker_table.empty and view.significance


def test_another_metric_is_kept_on_its_first_view_and_read_back_after(run):
    store, run_id = run
    assert store.stored_paired_tests(run_id, "ndcg", 5) is None
    first = results_view(store, run_id, "ndcg", 5)
    kept = store.stored_paired_tests(run_id, "ndcg", 5)
    assert _same(decode_tests(kept), _fresh(store, run_id, "ndcg", 5))
    again = results_view(store, run_id, "ndcg", 5)
    assert again.reranker_table.equals(first.reranker_table)
    assert [s.text for s in again.significance] == [s.text for s in first.significance]


def test_a_run_that_is_not_complete_is_tested_afresh_and_nothing_is_kept(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, random_spec(30, n_docs=200, seed=5), n_bootstrap=100)
    with store.connect() as con:
        con.execute("DELETE FROM paired_tests")
        con.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", [run_id])
    view = results_view(store, run_id, "dcg", 10)
    assert not view.reranker_table.empty
    assert store.stored_paired_tests(run_id, "dcg", 10) is None


def test_clearing_a_runs_contents_forgets_its_kept_tests(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, random_spec(20, n_docs=200, seed=6), n_bootstrap=100)
    assert store.stored_paired_tests(run_id, "dcg", 10) is not None
    with store.transaction() as con:
        store.clear_run_contents(con, run_id)
    assert store.stored_paired_tests(run_id, "dcg", 10) is None


def test_tests_kept_by_the_old_procedure_are_never_served(run):
    store, run_id = run
    # What the Holm-era code kept: [a, b, diff, ci_low, ci_high, p, n, holm_p, family] rows.
    old = '[["hybrid_rerank", "ann", 0.5, 0.1, 0.9, 0.001, 60, 0.003, 8]]'
    with store.connect() as con:
        con.execute("INSERT OR REPLACE INTO paired_tests VALUES (?, 'ndcg', 3, ?)", [run_id, old])
    assert decode_tests(old) is None
    view = results_view(store, run_id, "ndcg", 3)
    fresh = _fresh(store, run_id, "ndcg", 3)
    assert _same(decode_tests(store.stored_paired_tests(run_id, "ndcg", 3)), fresh)  # replaced
    # Every comparison made is said with its adjusted interval; one withheld says why instead.
    assert all("Holm" not in s.text and ("adjusted for" in s.text or "no verdict" in s.text)
               for s in view.significance if s.subject)
