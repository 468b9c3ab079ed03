"""A training stopped by a signal leaves no temporary folder; one killed outright is swept later."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.store import Store
from engine.training.reranker import sweep_stale
from tests.engine.training import synthetic

ROOT = Path(__file__).resolve().parents[3]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_sweep_removes_what_dead_trainings_left_and_puts_back_a_replaced_reranker(tmp_path):
    dead, alive = _dead_pid(), os.getpid()
    for name in (f".partial-demo-v1-{dead}", f".partial-busy-{alive}", f".old-kept-{dead}",
                 f".old-taken-{dead}", "taken", "not-temporary"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "card.json").write_text(name)
    swept = sweep_stale(tmp_path)
    assert sorted(swept) == sorted([f".partial-demo-v1-{dead}", f".old-kept-{dead}", f".old-taken-{dead}"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f".partial-busy-{alive}", "kept", "taken", "not-temporary"])
    assert (tmp_path / "kept" / "card.json").read_text() == f".old-kept-{dead}"  # put back
    assert (tmp_path / "taken" / "card.json").read_text() == "taken"  # the newer one wins


@pytest.mark.slow
def test_sigterm_stops_training_with_one_line_and_removes_its_temporary_folder(tmp_path):
    data = tmp_path / "data"
    store = Store(data)
    run_id = synthetic.store_run(store, synthetic.write_collection(tmp_path / "synthetic"), True)
    rerankers = data / "rerankers"
    stale = rerankers / f".partial-earlier-{_dead_pid()}"
    stale.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "train-reranker", run_id, "--name", "stopped",
         "--data-dir", str(data), "--folds", "4", "--epochs", "2", "--max-length", "40",
         "--depth", "10", "--negative-ranks", "7-20", "--threads", "1"],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    partial = rerankers / f".partial-stopped-{proc.pid}"
    deadline = time.monotonic() + 180
    while not partial.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert partial.exists(), proc.communicate()[1][-2000:]
    assert not stale.exists()  # swept at the start: its process is gone
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert "stopped by SIGTERM: no reranker 'stopped' was saved" in last
    assert sorted(p.name for p in rerankers.iterdir()) == []
