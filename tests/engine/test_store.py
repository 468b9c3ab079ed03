from __future__ import annotations

import multiprocessing
import time

import duckdb
import pytest

from searchgrade.core.records import Grade, Query, ScoredDoc, SearchGradeError, SearchHits
from searchgrade.engine.store import MIGRATIONS, Store


def _new_run(store: Store, **overrides) -> str:
    fields = dict(name="r", collection_name="c", collection_path="/c", mode="qrels",
                  label_source="human", grade_min=0, grade_max=1, threshold=1, k=10, depth=10,
                  config={"k": 10})
    fields.update(overrides)
    return store.create_run(**fields)


def test_migrations_are_applied_once_and_recorded(tmp_path):
    Store(tmp_path).list_runs()
    store = Store(tmp_path)  # a second connect must not re-apply anything
    assert store.schema_version() == MIGRATIONS[-1][0]
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM schema_version").fetchone()[0] == len(MIGRATIONS)


def test_a_store_opens_its_file_only_when_first_read(tmp_path):
    # Opening the file is what a cold page pays for: making a Store must not open it (and then
    # close it again, for the page's session to open it a second time).
    store = Store(tmp_path)
    assert not (tmp_path / "searchgrade.duckdb").exists()
    assert store.list_runs() == []
    assert store.schema_version() == MIGRATIONS[-1][0]


def test_run_is_created_running_and_finished_complete(tmp_path):
    store = Store(tmp_path)
    run_id = _new_run(store)
    assert store.get_run(run_id).status == "running"
    store.finish_run(run_id, "complete")
    run = store.get_run(run_id)
    assert run.status == "complete" and run.finished_at is not None
    assert run.config == {"k": 10}


def test_run_prefix_resolves_and_unknown_run_names_the_fix(tmp_path):
    store = Store(tmp_path)
    run_id = _new_run(store)
    assert store.get_run(run_id[:17]).run_id == run_id
    with pytest.raises(SearchGradeError, match="searchgrade runs"):
        store.get_run("nope")


def test_failed_transaction_leaves_nothing_behind(tmp_path):
    store = Store(tmp_path)
    run_id = _new_run(store)
    with pytest.raises(RuntimeError):
        with store.transaction() as con:
            store.write_queries(con, run_id, [Query("q1", "text")])
            raise RuntimeError("crash mid-write")
    assert store.queries(run_id) == []


def test_results_and_grades_round_trip(tmp_path):
    store = Store(tmp_path)
    run_id = _new_run(store)
    hits = [SearchHits([ScoredDoc("d1", 2.0, 1), ScoredDoc("d2", 1.0, 2)], 0.005)]
    with store.transaction() as con:
        store.write_queries(con, run_id, [Query("q1", "text")])
        store.write_results(con, run_id, "fulltext", ["q1"], hits)
        store.write_grades(con, run_id, [Grade("q1", "d2", 1, "human")])
    rows = store.results_with_grades(run_id)
    assert [(r["doc_id"], r["grade"]) for r in rows] == [("d1", None), ("d2", 1)]
    assert rows[0]["latency_ms"] == pytest.approx(5.0)
    by_rank = store.position_means(run_id, 10)
    assert [(r["rank"], r["mean_grade"]) for r in by_rank] == [(1, 0.0), (2, 1.0)]


def test_a_file_that_is_not_a_database_gets_a_one_line_error(tmp_path):
    (tmp_path / "searchgrade.duckdb").write_text("not a database")
    with pytest.raises(SearchGradeError) as info:
        Store(tmp_path).mark_stale_runs()  # what the CLI and the app do first
    assert "\n" not in str(info.value) and "--data-dir" in str(info.value)


def _hold_lock(path, ready, seconds):
    con = duckdb.connect(path)
    ready.put(True)
    time.sleep(seconds)
    con.close()


def _other_process_holding(tmp_path, seconds):
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Queue()
    proc = ctx.Process(target=_hold_lock, args=(str(tmp_path / "searchgrade.duckdb"), ready, seconds))
    proc.start()
    ready.get(timeout=60)
    return proc


def test_store_waits_while_another_process_holds_the_file(tmp_path):
    Store(tmp_path)
    proc = _other_process_holding(tmp_path, 1.5)
    try:
        start = time.monotonic()
        store = Store(tmp_path, lock_timeout_s=30)
        assert store.list_runs() == []
        assert time.monotonic() - start > 0.5
    finally:
        proc.join()


def test_store_locked_too_long_names_the_fix(tmp_path):
    Store(tmp_path)
    proc = _other_process_holding(tmp_path, 5)
    try:
        store = Store(tmp_path, lock_timeout_s=0.5)  # opens nothing yet
        with pytest.raises(SearchGradeError, match="locked by another process.*--data-dir"):
            store.list_runs()
    finally:
        proc.join()
