"""A training stopped by a signal leaves no temporary folder; one killed outright is swept later."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchgrade.core.owner import this_host
from searchgrade.engine.store import Store
from searchgrade.engine.training.stops import Stops, TrainingStopped, move_into_place, sweep_stale
from tests.engine.training import synthetic

ROOT = Path(__file__).resolve().parents[3]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_sweep_removes_what_dead_trainings_left_and_puts_back_a_replaced_reranker(tmp_path):
    dead, alive, here = _dead_pid(), os.getpid(), this_host()
    for name in (f".partial-demo-v1-{dead}@{here}", f".partial-busy-{alive}@{here}",
                 f".old-kept-{dead}@{here}", f".old-taken-{dead}@{here}", "taken", "not-temporary"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "card.json").write_text(name)
    swept = sweep_stale(tmp_path)
    assert sorted(swept) == sorted([f".partial-demo-v1-{dead}@{here}", f".old-kept-{dead}@{here}",
                                    f".old-taken-{dead}@{here}"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f".partial-busy-{alive}@{here}", "kept", "taken", "not-temporary"])
    assert (tmp_path / "kept" / "card.json").read_text() == f".old-kept-{dead}@{here}"  # put back
    assert (tmp_path / "taken" / "card.json").read_text() == "taken"  # the newer one wins


def test_sweep_leaves_another_hosts_folders_and_still_sweeps_the_old_format(tmp_path):
    """A data dir shared between machines: a process id of another host means nothing here."""
    dead = _dead_pid()
    other = "node-7.cluster" if this_host() != "node-7.cluster" else "node-8.cluster"
    names = [f".partial-busy-{dead}@{other}", f".old-kept-{dead}@{other}",  # another host's: live
             f".partial-earlier-{dead}"]  # written before folders named their host: this host's
    for name in names:
        (tmp_path / name).mkdir()
    assert sweep_stale(tmp_path) == [f".partial-earlier-{dead}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[:2])


def test_a_signal_during_the_move_into_place_stops_with_the_reranker_saved(tmp_path):
    partial, target = tmp_path / ".partial-x", tmp_path / "x"
    partial.mkdir()
    stops = Stops()
    with pytest.raises(TrainingStopped) as info, stops.held():
        stops.handle(signal.SIGTERM, None)  # arrives while the folder is being moved
        move_into_place(partial, target)
    assert info.value.saved and info.value.signum == signal.SIGTERM
    assert target.is_dir() and not partial.exists()
    with pytest.raises(TrainingStopped) as before:  # outside the move: nothing was saved
        Stops().handle(signal.SIGTERM, None)
    assert not before.value.saved


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
        [sys.executable, "-m", "searchgrade.cli", "train-reranker", run_id, "--name", "stopped",
         "--data-dir", str(data), "--folds", "4", "--epochs", "2", "--max-length", "40",
         "--depth", "10", "--negative-ranks", "7-20", "--threads", "1"],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    partial = rerankers / f".partial-stopped-{proc.pid}@{this_host()}"
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
