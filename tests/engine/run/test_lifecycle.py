"""A run's lifecycle: heartbeat, interrupted when it stops, cancel, and one owner at a time."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.lifecycle import RunCancelled, RunGuard, RunTakenOver
from searchgrade.engine.run.pipeline import RunOutcome
from searchgrade.engine.store import Store, new_owner
from searchgrade.server import jobs


def _new_run(store: Store, owner: str | None = None) -> str:
    return store.create_run(name="r", collection_name="c", collection_path="/c", mode="qrels",
                            label_source="human", grade_min=0, grade_max=1, threshold=1, k=10, depth=10,
                            config={"k": 10}, owner=owner)


def _run_with_a_heartbeat(data_dir, ready):
    os.environ["SEARCHGRADE_HEARTBEAT_TIMEOUT_S"] = "2"
    store = Store(data_dir)
    owner = new_owner()
    run_id = _new_run(store, owner)
    with RunGuard(store, run_id, owner, interval_s=0.2):
        ready.put(run_id)
        time.sleep(120)


def test_a_killed_process_leaves_a_run_seen_interrupted_once_its_heartbeat_is_stale(tmp_path, monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_HEARTBEAT_TIMEOUT_S", "2")
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Queue()
    proc = ctx.Process(target=_run_with_a_heartbeat, args=(str(tmp_path), ready))
    proc.start()
    try:
        run_id = ready.get(timeout=60)
        store = Store(tmp_path)
        # Alive past the timeout: its heartbeat keeps it running.
        time.sleep(3)
        assert store.get_run(run_id).status == "running"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
    killed = time.monotonic()
    # The same store object (an app that stays open) sees it interrupted, no restart needed.
    while store.get_run(run_id).status == "running":
        assert time.monotonic() - killed < 10, "still running 10 s after the kill"
        time.sleep(0.2)
    run = store.get_run(run_id)
    # Marked by the rule (no heartbeat for longer than the timeout), however busy the machine was.
    assert run.status == "interrupted" and "no heartbeat for more than 2 s" in run.error


def test_a_run_is_reopened_by_one_process_only(tmp_path):
    store = Store(tmp_path)
    run_id = _new_run(store, "a")
    store.finish_run(run_id, "cancelled", "stopped", owner="a")
    store.reopen_run(run_id, "b")
    with pytest.raises(SearchGradeError, match="is running; only an interrupted, failed or cancelled"):
        store.reopen_run(run_id, "c")
    # The first owner lost it: its status writes change nothing.
    assert not store.finish_run(run_id, "failed", "late", owner="a")
    assert store.get_run(run_id).status == "running"
    assert store.finish_run(run_id, "complete", owner="b")
    assert store.get_run(run_id).status == "complete"


def test_the_old_owner_of_a_resumed_run_is_told_to_stop(tmp_path):
    store = Store(tmp_path)
    run_id = _new_run(store, "a")
    guard = RunGuard(store, run_id, "a")
    guard.beat()
    guard.check()  # still ours
    store.finish_run(run_id, "interrupted", "looked dead", owner="a")
    store.reopen_run(run_id, "b")
    guard.beat()
    with pytest.raises(RunTakenOver):
        guard.check()


def test_a_slow_owner_marked_interrupted_takes_its_run_back_on_its_next_beat(tmp_path, monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_HEARTBEAT_TIMEOUT_S", "0.5")
    store = Store(tmp_path)
    run_id = _new_run(store, "a")
    time.sleep(0.7)
    assert store.get_run(run_id).status == "interrupted"
    RunGuard(store, run_id, "a").beat()
    run = store.get_run(run_id)
    assert run.status == "running" and run.error is None


def test_a_cancel_asked_in_the_store_reaches_the_process_at_its_next_beat(tmp_path):
    store = Store(tmp_path)
    run_id = _new_run(store, "a")
    guard = RunGuard(store, run_id, "a")
    assert store.request_cancel(run_id)
    guard.check()  # not seen before the beat
    guard.beat()
    with pytest.raises(RunCancelled):
        guard.check()
    store.finish_run(run_id, "cancelled", owner="a")
    assert not store.request_cancel(run_id)  # only a running run can be asked


def test_concurrent_heartbeats_and_status_writes_never_conflict(tmp_path):
    # DuckDB refuses two concurrent updates of one row; the store serialises them. And connections
    # opened and closed by several threads at once (the heartbeat beside a run's Arrow inserts)
    # must not race in DuckDB's client ("python_arrow_scan does not exist").
    store = Store(tmp_path)
    run_id = _new_run(store, "a")
    errors: list[BaseException] = []

    def hammer(write):
        try:
            for _ in range(150):
                write()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(lambda: store.heartbeat(run_id, "a"),)),
               threading.Thread(target=hammer, args=(lambda: store.update_run(run_id, stage="x"),)),
               threading.Thread(target=hammer, args=(store.mark_stale_runs,)),
               threading.Thread(target=hammer, args=(lambda: store.llm_cache_put(
                   "judge", [(os.urandom(8).hex(), "m", "v1", {"grade": 1})]),))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_bad_heartbeat_timeout_is_one_line_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_HEARTBEAT_TIMEOUT_S", "soon")
    with pytest.raises(SearchGradeError, match="SEARCHGRADE_HEARTBEAT_TIMEOUT_S='soon' is not a positive"):
        Store(tmp_path).list_runs()


class _SlowStore:
    """A store whose reads and writes take a second, as DuckDB waiting for another process."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def request_cancel(self, run_id):
        self.calls.append("request_cancel")
        time.sleep(1.0)
        return self.inner.request_cancel(run_id)

    def get_run(self, run_id):
        self.calls.append("get_run")
        time.sleep(1.0)
        return self.inner.get_run(run_id)


def test_cancel_from_the_app_stops_the_job_and_the_registry_never_waits_on_the_store(tmp_path):
    store = Store(tmp_path)
    slow = _SlowStore(store)
    started = threading.Event()

    def run(collection, config, store_, data_dir, *, progress=None, on_run_created=None, on_usage=None,
            on_complete=None):
        owner = new_owner()
        run_id = _new_run(store, owner)
        on_run_created(run_id)
        started.set()
        try:
            while True:  # a long stage, reporting progress
                progress("grade", 1, 10)
                time.sleep(0.02)
        except RunCancelled:
            store.finish_run(run_id, "cancelled", "cancelled from the app", owner=owner)
            raise
        return RunOutcome(run_id, "complete")

    job, _ = jobs.start_job(lambda: type("C", (), {"notes": []})(), None, slow, tmp_path, label="c", run=run)
    try:
        assert started.wait(30)
        canceller = threading.Thread(target=jobs.cancel, args=(job.job_id, slow))
        canceller.start()
        # The store takes a second per call (the cancel request, then the worker's last read):
        # the registry answers at once all the while.
        slowest = 0.0
        deadline = time.monotonic() + 60
        while (jobs.snapshot(job.job_id).active or canceller.is_alive()) and time.monotonic() < deadline:
            t0 = time.monotonic()
            jobs.snapshot(job.job_id)
            jobs.active_job()
            slowest = max(slowest, time.monotonic() - t0)
            time.sleep(0.01)
        canceller.join()
        final = jobs.wait(job.job_id, 30)
    finally:
        jobs._reset_for_tests()
    assert final.state == "cancelled" and "resume" in final.error
    assert store.get_run(final.run_id).status == "cancelled"
    assert slow.calls == ["request_cancel", "get_run"]
    assert slowest < 0.5, f"the registry waited {slowest:.1f} s on the store"
