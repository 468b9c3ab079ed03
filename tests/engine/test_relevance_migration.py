"""Mean relevance and the shares divide by k: short lists are never rewarded, stored runs are
recomputed once by migration 9 (with a note), and the Results page flags short lists."""

from __future__ import annotations

import pytest

from searchgrade.engine.store import Store
from searchgrade.engine.store.relevance_recompute import NOTE, RELEVANCE_METRICS
from searchgrade.viewmodels.results import results_view
from tests.pages.synthetic import llm_spec, tiny_spec, write_run

METRICS = list(RELEVANCE_METRICS)


def _short_spec(**overrides):
    """The tiny run, full-text returning one result (graded 3) for q1 and two for q2, at k = 3."""
    spec = tiny_spec(name="short lists", **overrides)
    spec.rankings = {**spec.rankings, "fulltext": {"q1": ["d1"], "q2": ["d6", "d2"]}}
    return spec


def _rows(store: Store, table: str, run_id: str) -> list[tuple]:
    columns = {"metric_values": "strategy, query_id, metric, k, value",
               "metric_summary": "strategy, metric, k, value, ci_low, ci_high, n",
               "run_summary": "strategy, metric, k, value, ci_low, ci_high, n"}[table]
    with store.connect() as con:
        return con.execute(f"SELECT {columns} FROM {table} WHERE run_id = ? AND list_contains(?, metric) "  # noqa: S608 - the test's own table names
                           "ORDER BY ALL", [run_id, METRICS]).fetchall()


def test_a_one_result_strategy_no_longer_leads_on_mean_relevance(tmp_path):
    store = Store(tmp_path)
    view = results_view(store, write_run(store, _short_spec()), "mean_relevance", 3)
    means = view.metric_summary.set_index("strategy")["value"]
    # fulltext q1 [3, -, -] = 1.0 (not 3.0), q2 [0, 3, -] = 1.0; ann q1 [0, 3, 0] = 1.0, q2 [2, 0, 3] = 5/3.
    assert means["fulltext"] == pytest.approx(1.0) and means["ann"] == pytest.approx(4 / 3)
    shares = view.distribution.set_index("Strategy")
    assert shares.loc["Full-text (BM25)", "% relevant (grade ≥ 2)"] == pytest.approx(100 * 2 / 6)
    assert shares.loc["Full-text (BM25)", "% not relevant (grade < 2)"] == pytest.approx(100 * 4 / 6)
    # The curve says how many queries reached each rank; full-text is flagged, the others are not.
    curve = view.by_position.set_index(["strategy", "rank"])
    assert curve.loc[("fulltext", 2), "with_result"] == 1 and curve.loc[("fulltext", 3), "with_result"] == 0
    assert curve.loc[("fulltext", 3), "queries"] == 2 and curve.loc[("fulltext", 3), "mean_grade_all"] == 0.0
    assert curve.loc[("ann", 3), "with_result"] == 2
    shorts = view.short_lists.set_index("strategy")
    assert shorts.loc["fulltext", ["short", "queries", "flagged"]].tolist() == [2, 2, True]
    assert not shorts.loc["ann", "flagged"] and not shorts.loc["ann_rerank", "flagged"]
    [warning] = view.short_list_warnings
    assert warning.kind == "warn" and warning.subject == "fulltext"
    assert warning.text.startswith("Full-text (BM25) returned fewer than 3 results on 2 of 2 queries (100%)")
    # The curve reads as the table: mean relevance@3 is the mean of the ranks' means over all queries.
    for strategy, mean in means.items():
        assert curve.loc[strategy, "mean_grade_all"].mean() == pytest.approx(mean)


def test_a_failed_judgment_leaves_its_place_out_of_the_k(tmp_path):
    store = Store(tmp_path)
    spec = llm_spec()
    spec.rankings = {**spec.rankings, "fulltext": {"q1": ["d5", "d1"], "q2": ["d6"]}}
    run_id = write_run(store, spec)
    values = {(r["strategy"], r["query_id"]): r["value"]
              for r in store.metric_values(run_id, "mean_relevance", 3)}
    # fulltext q1 [failed, 3, -]: 3 / 2 places; q2 [failed, -, -]: 0 / 2; ann q2 [2, failed, 3]: 5 / 2.
    assert values[("fulltext", "q1")] == pytest.approx(1.5) and values[("fulltext", "q2")] == 0.0
    assert values[("ann", "q2")] == pytest.approx(2.5)
    one = {(r["strategy"], r["query_id"]): r["value"] for r in store.metric_values(run_id, "pct_not_relevant", 1)}
    assert ("fulltext", "q1") not in one  # its one place failed: no value


def test_migration_9_recomputes_stored_runs_once_with_a_note(tmp_path):
    store = Store(tmp_path)
    short = write_run(store, _short_spec(), n_bootstrap=1000)
    full = write_run(store, tiny_spec(name="full lists"), n_bootstrap=1000)
    for run_id in (short, full):  # what the pipeline records; write_run's config leaves them out
        store.update_run(run_id, config={**store.get_run(run_id).config, "n_bootstrap": 1000, "seed": 0})
    expected = {(run_id, table): _rows(store, table, run_id)
                for run_id in (short, full) for table in ("metric_values", "metric_summary", "run_summary")}
    # The store as an older version left it: the short-list run's values divided by what was returned.
    with store.connect() as con:
        con.execute("UPDATE metric_values SET value = value * 3 WHERE run_id = ? AND list_contains(?, metric) "
                    "AND strategy = 'fulltext'", [short, METRICS])
        con.execute("UPDATE metric_summary SET value = 9 WHERE run_id = ? AND list_contains(?, metric)", [short, METRICS])
        con.execute("UPDATE run_summary SET value = 9 WHERE run_id = ? AND list_contains(?, metric)", [short, METRICS])
        con.execute("INSERT OR REPLACE INTO paired_tests VALUES (?, 'dcg', 3, '[]')", [full])
        con.execute("DELETE FROM schema_version WHERE version = 9")
    assert store.kept_reads(full)

    reopened = Store(tmp_path)
    for run_id in (short, full):
        for table in ("metric_values", "metric_summary", "run_summary"):
            assert _rows(reopened, table, run_id) == expected[(run_id, table)], (run_id, table)
    assert reopened.get_run(short).notes.count(NOTE) == 1
    assert NOTE not in reopened.get_run(full).notes  # nothing changed there
    # Kept figures of the old procedure and the old values are never served: all cleared.
    assert not reopened.kept_reads(short) and not reopened.kept_reads(full)
    assert reopened.stored_paired_tests(full, "dcg", 3) is None
    view = results_view(reopened, short, "mean_relevance", 3)
    assert view.metric_summary.set_index("strategy").loc["fulltext", "value"] == pytest.approx(1.0)
    assert NOTE in view.notes
