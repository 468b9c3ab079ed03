"""A complete run's Results reads are computed once and kept (viewmodels/results_cache.py): the kept
answers are exactly the fresh ones, a run completed before they existed gets them on its first
view, a run that is not complete is read afresh, and whatever changes the run's contents (a
re-grade, a resume's new search results, a reopened run) forgets them."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from searchgrade.core.records import ScoredDoc, SearchHits
from searchgrade.engine.store import Store
from searchgrade.viewmodels.failures import failure_summary, failure_table
from searchgrade.viewmodels.results import keep_first_view, results_view
from searchgrade.viewmodels.results_cache import RunReads
from searchgrade.viewmodels.significance import PROCEDURE
from tests.pages.synthetic import llm_spec, random_spec, write_run

FRAMES = ("metric_summary", "metric_table", "relevance_table", "by_position", "best_queries", "worst_queries",
          "reranker_table", "distribution", "latency")


def _fresh_view(store: Store, run_id: str, metric: str, k: int, monkeypatch):
    """The view with nothing kept read and nothing kept written: every read computed afresh."""
    with monkeypatch.context() as m:
        m.setattr(store, "kept_reads", lambda *args: {})
        m.setattr(store, "keep_reads", lambda run_id, values, finished_at: None)
        return results_view(store, run_id, metric, k)


def _same_view(a, b) -> None:
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True, obj=name)
    assert [s.text for s in a.significance] == [s.text for s in b.significance]
    assert [s.text for s in a.recommendations] == [s.text for s in b.recommendations]


def _parts(store: Store, run_id: str) -> set[str]:
    return {part for part, _ in store.kept_reads(run_id)}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("kept-reads"))
    return store, write_run(store, random_spec(60, n_docs=400, seed=7), n_bootstrap=200)


def test_a_completed_run_keeps_its_first_views_reads_equal_to_fresh_ones(run, monkeypatch):
    store, run_id = run
    assert _parts(store, run_id) == {"position_means", "failure_summary", "latency_summary",
                                     "unretrieved_relevant", "query_extremes", "metric_by_query_type",
                                     "reranker_rows", "failure_table", "failure_groups"}
    _same_view(results_view(store, run_id), _fresh_view(store, run_id, "dcg", 10, monkeypatch))
    record = store.get_run(run_id)
    kept = {part: json.loads(value) for (part, _), value in store.kept_reads(run_id).items()}
    assert kept["unretrieved_relevant"] == store.unretrieved_relevant(run_id, record.threshold)
    with monkeypatch.context() as m:
        m.setattr(store, "kept_reads", lambda *args: {})
        fresh = failure_summary(store, run_id)
    pd.testing.assert_frame_equal(failure_summary(store, run_id).table, fresh.table, check_exact=True)
    assert kept["latency_summary"] == store.latency_summary(run_id)


def test_the_position_curve_is_kept_once_and_cut_at_each_k(run):
    store, run_id = run
    reads = RunReads(store, store.get_run(run_id))
    for k in (1, 5, 10):
        assert reads.position_means(k) == store.position_means(run_id, k)


def test_another_metric_and_cut_off_are_kept_on_first_view_and_equal_fresh(run, monkeypatch):
    store, run_id = run
    for metric, k in (("ndcg", 5), ("precision", 7)):
        first = results_view(store, run_id, metric, k)
        assert (("reranker_rows", f"{metric}@{k}/{PROCEDURE}/twins")) in store.kept_reads(run_id)
        _same_view(first, _fresh_view(store, run_id, metric, k, monkeypatch))
        _same_view(results_view(store, run_id, metric, k), first)


def test_a_run_completed_before_reads_were_kept_gets_them_on_its_first_view(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, random_spec(30, n_docs=200, seed=8), n_bootstrap=100)
    with store.connect() as con:
        con.execute("DELETE FROM kept_reads")
    assert not store.kept_reads(run_id)
    view = results_view(store, run_id)
    assert "position_means" in _parts(store, run_id)
    pd.testing.assert_frame_equal(results_view(store, run_id).by_position, view.by_position, check_exact=True)


def test_a_run_that_is_not_complete_is_read_afresh_and_keeps_nothing(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, random_spec(30, n_docs=200, seed=9), n_bootstrap=100)
    with store.connect() as con:
        con.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", [run_id])
        con.execute("UPDATE kept_reads SET value = '{}' WHERE part = 'failure_summary'")  # stale on purpose
    view = results_view(store, run_id)
    assert len(failure_summary(store, run_id).table) == 6  # read afresh, not the stale kept rows
    assert view.recommendations
    with store.connect() as con:
        con.execute("DELETE FROM kept_reads")
    results_view(store, run_id)
    keep_first_view(store, run_id)
    assert not store.kept_reads(run_id)


def test_regrading_or_new_search_results_forget_what_was_kept(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, random_spec(20, n_docs=200, seed=10), n_bootstrap=100)
    assert store.kept_reads(run_id) and store.stored_paired_tests(run_id, "dcg", 10)
    with store.transaction() as con:  # what a re-grade clears before writing the new grades
        store.clear_run_contents(con, run_id, store.GRADED_TABLES)
    assert not store.kept_reads(run_id)
    keep_first_view(store, run_id)
    assert store.kept_reads(run_id)
    hits = {"ann": [SearchHits([ScoredDoc("d1", 1.0, 1)], 0.001)]}
    with store.transaction() as con:  # a resume writes the search stage again
        store.write_search(con, run_id, ["q0"], hits, {})
    assert not store.kept_reads(run_id) and store.stored_paired_tests(run_id, "dcg", 10) is None


def test_a_run_reopened_while_a_page_computed_keeps_nothing(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, random_spec(20, n_docs=200, seed=11), n_bootstrap=100)
    reads = RunReads(store, store.get_run(run_id))  # the page read the run as complete
    with store.connect() as con:
        con.execute("DELETE FROM kept_reads")
        con.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", [run_id])  # a resume took it
    reads.latency_summary()
    reads.save()
    assert not store.kept_reads(run_id)


def test_a_run_resumed_and_completed_again_while_a_page_computed_keeps_nothing_of_the_old_one(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, random_spec(20, n_docs=200, seed=12), n_bootstrap=100)
    old = store.get_run(run_id)  # the page read the run as complete
    reads = RunReads(store, old)
    with store.connect() as con:  # meanwhile a resume reopened it, cleared what was kept, and completed it
        con.execute("DELETE FROM kept_reads")
        con.execute("DELETE FROM paired_tests")
        con.execute("UPDATE runs SET finished_at = finished_at + INTERVAL 5 SECOND WHERE run_id = ?", [run_id])
    reads.latency_summary()
    reads.save()
    store.remember_paired_tests(run_id, "dcg", 10, "[]", finished_at=old.finished_at)
    assert not store.kept_reads(run_id) and store.stored_paired_tests(run_id, "dcg", 10) is None
    # The new completion's own reads are kept.
    new = store.get_run(run_id)
    reads = RunReads(store, new)
    reads.latency_summary()
    reads.save()
    store.remember_paired_tests(run_id, "dcg", 10, "[]", finished_at=new.finished_at)
    assert store.kept_reads(run_id) and store.stored_paired_tests(run_id, "dcg", 10) == "[]"


def test_failed_top1_and_its_cells_list_the_same_queries_by_one_rule(tmp_path):
    # llm run: ann q1 [d3 0, ...] q2 [d4 2, ...]; fulltext q1 [d5 failed, ...] q2 [d6 failed, ...];
    # d9 unjudged at the top of ann_rerank's q2.
    spec = llm_spec()
    spec.rankings["ann_rerank"] = {"q1": ["d1", "d3", "d5"], "q2": ["d9", "d4", "d2"]}
    store = Store(tmp_path)
    run_id = write_run(store, spec)
    threshold = store.get_run(run_id).threshold
    for strategy, failed in (("ann", ["q1"]), ("fulltext", []), ("ann_rerank", ["q2"])):
        long = store.failed_top1(run_id, strategy, threshold)
        cells = store.failed_top1_cells(run_id, strategy, threshold)
        assert sorted({r["query_id"] for r in long}) == sorted(set(cells["query_id"])) == failed
        assert [(r["query_id"], r["strategy"]) for r in long] == list(zip(cells["query_id"], cells["strategy"],
                                                                            strict=True))
        assert failure_table(store, run_id, strategy)["Query id"].tolist() == failed
    row = failure_table(store, run_id, "ann").set_index("Query id").loc["q1"].to_dict()
    assert {row[name] for name in ("ANN (dense)", "Full-text (BM25)", "ANN + reranker")} == {
        "[0] Doc 3 title (d3)", "[judge failed] Doc 5 title (d5)", "[3] Doc 1 title (d1)"}
    row = failure_table(store, run_id, "ann_rerank").set_index("Query id").loc["q2"].to_dict()
    assert "[unjudged] d9 (d9)" in row.values()
    for _ in range(2):  # made, then read back kept: an empty table keeps its columns
        empty = failure_table(store, run_id, "fulltext")
        assert empty.empty and empty.columns.tolist()[:6] == ["Query id", "Query", "Type", "Kind", "Cause", "Evidence"]
        assert len(empty.columns) == 11


def test_each_strategys_failed_queries_table_is_kept_on_its_first_view_equal_to_a_fresh_one(run, monkeypatch):
    store, run_id = run
    default = failure_summary(store, run_id).default
    assert store.kept_read(run_id, "failure_table", default) is not None  # kept when the run completed
    assert store.kept_read(run_id, "failure_groups", default) is not None
    for strategy in store.result_strategies(run_id):
        first = failure_table(store, run_id, strategy)
        assert not first.empty and store.kept_read(run_id, "failure_table", strategy) is not None
        with monkeypatch.context() as m:
            m.setattr(store, "kept_read", lambda *args: None)
            m.setattr(store, "keep_reads", lambda *args, **kwargs: None)
            fresh = failure_table(store, run_id, strategy)
        pd.testing.assert_frame_equal(first, fresh, check_exact=True)
        pd.testing.assert_frame_equal(failure_table(store, run_id, strategy), first, check_exact=True)


def test_a_failed_head_start_is_one_warning_and_the_run_stays_complete(tmp_path, monkeypatch, capsys):
    store = Store(tmp_path)
    run_id = write_run(store, random_spec(20, n_docs=200, seed=13), n_bootstrap=100)
    with store.connect() as con:
        con.execute("DELETE FROM kept_reads")

    def broken(*_args, **_kwargs):
        raise OSError("disk full\nsecond line")

    monkeypatch.setattr("searchgrade.viewmodels.results.results_view", broken)
    keep_first_view(store, run_id)
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is complete" in err and "OSError: disk full" in err
    assert store.get_run(run_id).status == "complete" and not store.kept_reads(run_id)


def test_runs_from_the_command_line_and_the_app_keep_their_first_results_page(tmp_path, tiny_beir):
    # The run does not import the report layer: each caller hands it keep_first_view as its
    # completion hook (cli/evaluate.py, cli/labels.py for rescore, server/jobs.py).
    from searchgrade.cli import main
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.labels.ratings import content_hash, new_rating
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.run.pipeline import run_evaluation
    from searchgrade.server import jobs
    from tests.conftest import write_beir

    data = tmp_path / "d"
    # Binary qrels: a scale people's 0-3 ratings can be mixed into (for the re-score below).
    binary = write_beir(tmp_path / "binary", qrels=[("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d3", 1),
                                                     ("q3", "d6", 1), ("q4", "d10", 1), ("q5", "d11", 1)])
    assert main(["evaluate", str(binary), "--qrels", "--strategies", "fulltext", "--data-dir", str(data)]) == 0
    store = Store(data)
    (from_cli,) = store.list_runs()
    assert _parts(store, from_cli.run_id) >= {"position_means", "failure_summary"}
    # A person rates a result the qrels left unjudged: `searchgrade rescore` makes a new run, kept too.
    unjudged = next(r for r in store.results_with_grades(from_cli.run_id) if r["grade"] is None)
    text = {q["query_id"]: q["text"] for q in store.queries(from_cli.run_id)}[unjudged["query_id"]]
    doc = store.documents(from_cli.run_id, [unjudged["doc_id"]])[unjudged["doc_id"]]
    store.add_labels([new_rating(collection_name=from_cli.collection_name, query_id=unjudged["query_id"],
                                 query_text=text, doc_id=unjudged["doc_id"],
                                 content_hash=content_hash(doc["title"], doc["text"]), grade=3, rater="alice",
                                 run_id=from_cli.run_id)])
    assert main(["rescore", from_cli.run_id, "--data-dir", str(data)]) == 0
    (rescored,) = [r for r in store.list_runs() if r.parent_run_id == from_cli.run_id]
    assert _parts(store, rescored.run_id) >= {"position_means", "failure_summary"}

    config = RunConfig(strategies=("fulltext",), n_bootstrap=200)
    job, _ = jobs.start_job(lambda: load_collection(tiny_beir), config, store, data, label="tiny")
    try:
        final = jobs.wait(job.job_id, 120)
    finally:
        jobs._reset_for_tests()
    assert final.state == "complete" and _parts(store, final.run_id) >= {"position_means", "failure_summary"}

    # The run itself keeps nothing: without the hook, the first Results page computes its reads.
    bare = run_evaluation(load_collection(tiny_beir), config, store, data).run_id
    assert store.get_run(bare).status == "complete" and not store.kept_reads(bare)
