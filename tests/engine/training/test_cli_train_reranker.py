"""`searchgrade train-reranker`: every bad input is one line naming the fix, and nothing is left behind."""

from __future__ import annotations

import shutil

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.conftest import write_beir


def _run(folder):
    data = folder / "data"
    assert main(["evaluate", str(write_beir(folder / "tiny")), "--qrels", "--data-dir", str(data),
                 "--strategies", "fulltext"]) == 0
    return data, Store(data).list_runs()[0].run_id


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory):
    """A complete qrels run of the full-text strategy on the tiny collection (not to be changed)."""
    return _run(tmp_path_factory.mktemp("cli"))


@pytest.fixture
def run_dir(tmp_path):
    """The same, for a test that changes it."""
    return _run(tmp_path)


def _error(capsys, argv) -> str:
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("extra,message", [
    (["--name", "Bad Name"], "is not allowed"),
    (["--name", "ok", "--folds", "1"], "--folds of 1 must be at least 2"),
    (["--name", "ok", "--negative-ranks", "50-10"], "--negative-ranks 50-10"),
    (["--name", "ok", "--negative-ranks", "ten"], "--negative-ranks 'ten' must be FIRST-LAST"),
    (["--name", "ok", "--max-length", "8"], "max_length of 8"),
    (["--name", "ok", "--train-layers", "some"], "--train-layers 'some'"),
    (["--name", "ok", "--body-layers", "few"], "--body-layers 'few' must be a whole number or 'all'"),
    # "none" is neither in the help nor the error: it must not quietly mean "all"
    (["--name", "ok", "--train-layers", "none"], "--train-layers 'none' must be a whole number or 'all'"),
    (["--name", "ok", "--threads", "0"], "--threads of 0"),
    (["--name", "ok", "--train-queries", "q.jsonl"], "--train-queries goes with --train-qrels"),
    (["--name", "ok", "--base-model", "/no/such/model"], "is not a local model folder"),
    (["--name", "ok", "--folds", "9"], "use --folds 5 or fewer"),
])
def test_bad_options_are_one_line_with_the_fix(shared_run, capsys, extra, message):
    data, run_id = shared_run
    err = _error(capsys, ["train-reranker", run_id, "--data-dir", str(data), *extra])
    assert message in err
    assert not list((data / "rerankers").glob("*")) if (data / "rerankers").exists() else True


def test_an_unknown_run_is_one_line(shared_run, capsys):
    data, _ = shared_run
    assert "no run" in _error(capsys, ["train-reranker", "nope", "--name", "x", "--data-dir", str(data)]).lower()


def test_an_incomplete_run_is_refused_with_resume_as_the_fix(run_dir, capsys):
    data, run_id = run_dir
    Store(data).finish_run(run_id, "interrupted", "stopped")
    err = _error(capsys, ["train-reranker", run_id, "--name", "x", "--data-dir", str(data)])
    assert "not complete" in err and f"searchgrade resume {run_id}" in err


def test_a_run_whose_collection_is_gone_says_so(run_dir, tmp_path, capsys):
    data, run_id = run_dir
    shutil.rmtree(tmp_path / "tiny")
    err = _error(capsys, ["train-reranker", run_id, "--name", "x", "--data-dir", str(data)])
    assert "is gone" in err


def test_a_stop_after_the_reranker_was_saved_says_it_was_saved(shared_run, capsys, monkeypatch):
    """A SIGTERM held while the reranker moved into place is raised after it is there: the one line
    must say the reranker was saved, not that none was."""
    import signal

    from searchgrade.engine.training import reranker as training

    def stopped_as_it_finished(*args, **kwargs):
        raise training.TrainingStopped(signal.SIGTERM, saved=True)

    monkeypatch.setattr(training, "train_reranker", stopped_as_it_finished)
    data, run_id = shared_run
    err = _error(capsys, ["train-reranker", run_id, "--data-dir", str(data), "--name", "done"])
    assert "stopped by SIGTERM" in err and "reranker 'done' was saved" in err
    assert "no reranker" not in err and "trained:done" in err
