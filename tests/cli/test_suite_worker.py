"""`searchgrade worker`: real worker processes run a suite scheduled every 2 seconds, each due slot
once even with two workers started together; `worker --once` runs a missed schedule once."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.conftest import write_beir

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def _scheduled_once(tmp_path_factory):
    """A suite over the tiny collection (fulltext), made once per module."""
    data = tmp_path_factory.mktemp("scheduled") / "d"
    folder = write_beir(tmp_path_factory.mktemp("beir") / "tiny")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["evaluate", str(folder), "--qrels", "--strategies", "fulltext", "--data-dir", str(data)]) == 0
        run_id = out.getvalue().strip().splitlines()[-1]
        assert main(["suite", "create", "tick", "--from", run_id, "--data-dir", str(data)]) == 0
    return data


@pytest.fixture
def scheduled(_scheduled_once, tmp_path):
    """A copy of that data directory with the suite scheduled every 2 s from now."""
    data = tmp_path / "d"
    shutil.copytree(_scheduled_once, data)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["suite", "schedule", "tick", "--every", "2s", "--data-dir", str(data)]) == 0
    return data


def _worker(data: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "searchgrade.cli", "worker", "--data-dir", str(data)], cwd=REPO,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def test_two_workers_started_together_run_the_suite_on_schedule_each_slot_once(scheduled):
    workers = [_worker(scheduled), _worker(scheduled)]
    store = Store(scheduled)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ran = [e for e in store.suite_entries("tick") if e["trigger"] == "schedule" and e["run_status"] == "complete"
                   and e["status"] != "running"]
            if len(ran) >= 2:
                break
            assert all(w.poll() is None for w in workers), [w.stderr.read() for w in workers if w.poll() is not None]
            time.sleep(0.5)
    finally:
        for w in workers:
            w.terminate()
        logs = [w.communicate(timeout=60)[1] for w in workers]
    entries = [e for e in store.suite_entries("tick") if e["trigger"] == "schedule"]
    assert len([e for e in entries if e["run_status"] == "complete"]) >= 2, logs
    slots = [e["slot"] for e in entries]
    assert len(slots) == len(set(slots)), logs  # no slot was run twice
    leased = {r["slot"]: r for r in store.suite_slots("tick")}
    assert all(leased[s]["entry_id"] == e["entry_id"] for s, e in zip(slots, entries, strict=True))
    # Each worker's lines name the slots it ran; together they ran every entry once.
    ran_lines = sum(log.count("running the slot of") for log in logs)
    assert ran_lines == len(entries), logs
    # Slots that came due during a run were recorded skipped with a note, not run late; no lease of
    # a live worker was taken for a dead one's.
    assert "interrupted" not in {row["status"] for row in leased.values()}, logs
    for row in leased.values():
        if row["status"] == "skipped":
            assert "came due while the suite was running" in row["note"]


def test_worker_once_runs_a_missed_schedule_once_with_a_note(scheduled, capsys):
    store = Store(scheduled)
    suite = store.get_suite("tick")
    # As if the worker had been down for a minute: 30 slots of 2 s came due.
    store.update_suite("tick", schedule_anchor=suite.schedule_anchor - timedelta(seconds=60))
    assert main(["worker", "--once", "--data-dir", str(scheduled)]) == 0
    entries = [e for e in store.suite_entries("tick") if e["trigger"] == "schedule"]
    assert len(entries) == 1 and entries[0]["run_status"] == "complete"
    slot = store.suite_slots("tick")[0]
    assert "passed with no worker free to run them: this run stands for them" in slot["note"]
    # Due again only at the next slot: at once, nothing (or, if 2 s passed, that one slot).
    assert main(["worker", "--once", "--data-dir", str(scheduled)]) == 0
    assert len([e for e in store.suite_entries("tick") if e["trigger"] == "schedule"]) <= 2


def test_a_worker_beside_an_app_stops_when_the_app_is_gone(tmp_path):
    # `searchgrade app --worker` starts the worker with --stop-with the app's pid: not its parent here.
    done = subprocess.run([sys.executable, "-m", "searchgrade.cli", "worker", "--stop-with", "1", "--data-dir",
                           str(tmp_path / "d")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "worker stopped" in done.stderr


@pytest.fixture
def slow_scheduled(tmp_path):
    """A suite over the tiny collection through a declared search server that takes 1 s per query,
    one query at a time, scheduled every 2 s: its run lasts seconds, so a worker can be killed in
    the middle of it whatever the machine's load (a full-text-only run can finish between the read
    that sees it running and the kill)."""
    from tests.indexes.declared.conftest import SearchServer

    folder = write_beir(tmp_path / "tiny")
    server = SearchServer(folder, tmp_path / "server-data")
    try:
        server.control(latency_ms=1000)
        data, strategies = tmp_path / "d", tmp_path / "strategies.toml"
        strategies.write_text(
            f'[strategy.es]\nkind = "elasticsearch"\nhost = "{server.url}"\nindex = "tiny"\n'
            'query = \'{"match": {"text": {{query}}}}\'\nretries = 0\nconcurrency = 1\n', encoding="utf-8")
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(["evaluate", str(folder), "--qrels", "--strategies", "es", "--strategies-file",
                         str(strategies), "--data-dir", str(data)]) == 0
            run_id = out.getvalue().strip().splitlines()[-1]
            assert main(["suite", "create", "tick", "--from", run_id, "--data-dir", str(data)]) == 0
            assert main(["suite", "schedule", "tick", "--every", "2s", "--data-dir", str(data)]) == 0
        yield data
    finally:
        server.stop()


def test_a_worker_killed_mid_run_leaves_the_run_interrupted_and_the_next_worker_resumes_it(slow_scheduled,
                                                                                          monkeypatch):
    import signal

    scheduled = slow_scheduled
    store = Store(scheduled)
    monkeypatch.setenv("SEARCHGRADE_HEARTBEAT_TIMEOUT_S", "3")
    worker = subprocess.Popen([sys.executable, "-m", "searchgrade.cli", "worker", "--data-dir", str(scheduled)],
                              cwd=REPO, env={**os.environ}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        running = None
        while time.monotonic() < deadline and running is None:
            running = next((e for e in store.suite_entries("tick")
                            if e["trigger"] == "schedule" and e["run_status"] == "running"), None)
            time.sleep(0.1)
        assert running is not None
    finally:
        worker.send_signal(signal.SIGKILL)  # no handler runs: as a machine losing power would
        worker.wait(30)
    deadline = time.monotonic() + 30
    while store.get_run(running["run_id"]).status != "interrupted" and time.monotonic() < deadline:
        time.sleep(0.2)  # the heartbeat going stale is what marks it
    assert store.get_run(running["run_id"]).status == "interrupted"
    assert main(["worker", "--once", "--data-dir", str(scheduled)]) == 0
    entry = store.suite_entry(running["entry_id"])
    assert store.get_run(running["run_id"]).status == "complete" and entry["status"] == "compared"
    slot = next(r for r in store.suite_slots("tick") if r["entry_id"] == running["entry_id"])
    assert slot["status"] == "done" and "resumed" in slot["note"]
