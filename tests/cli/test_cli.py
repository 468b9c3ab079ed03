from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.conftest import CRANFIELD

SEARCHGRADE = [sys.executable, "-m", "searchgrade.cli"]


def _evaluate(tiny_beir, data_dir, *extra) -> str:
    code = main(["evaluate", str(tiny_beir), "--qrels", "--data-dir", str(data_dir),
                 "--strategies", "ann,fulltext,hybrid", *extra])
    assert code == 0
    return Store(data_dir).list_runs()[0].run_id


def test_evaluate_prints_the_run_id_on_the_last_line(tmp_path, tiny_beir, capsys):
    run_id = _evaluate(tiny_beir, tmp_path / "d", "--name", "first")
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1] == run_id


def test_show_json_has_the_documented_shape(tmp_path, tiny_beir, capsys):
    run_id = _evaluate(tiny_beir, tmp_path / "d")
    capsys.readouterr()
    assert main(["show", run_id, "--format", "json", "--data-dir", str(tmp_path / "d")]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["run"]["run_id"] == run_id and payload["run"]["status"] == "complete"
    metrics = {(m["strategy"], m["metric"], m["k"]) for m in payload["metrics"]}
    for name in ("dcg", "ndcg", "precision", "recall", "recall_single_hit", "mrr", "map", "mean_relevance"):
        for strategy in ("ann", "fulltext", "hybrid"):
            assert (strategy, name, 10) in metrics
    assert payload["run"]["stats"]["ann_recall"] == {"index": "flat", "exact": True}
    row = payload["metrics"][0]
    assert set(row) >= {"strategy", "metric", "k", "value", "ci_low", "ci_high"}
    # The Results page's paired differences, with the page's kept figures: best against the others.
    comparisons = payload["comparisons"]
    assert (comparisons["metric"], comparisons["k"]) == ("dcg", 10) and len(comparisons["pairs"]) == 2
    store = Store(tmp_path / "d")
    kept = json.loads(store.stored_paired_tests(run_id, "dcg", 10))["tests"]
    for pair, (a, b, diff, low, high, p, n, m, _alpha) in zip(comparisons["pairs"], kept, strict=True):
        assert (pair["a"], pair["b"], pair["diff"], pair["p_value"], pair["n"], pair["comparisons"]) == (a, b, diff, p, n, m)
        assert pair["significant"] == (pair["ci_low"] is not None and (pair["ci_low"] > 0 or pair["ci_high"] < 0))


def test_show_table_and_runs_list_the_run(tmp_path, tiny_beir, capsys):
    run_id = _evaluate(tiny_beir, tmp_path / "d")
    capsys.readouterr()
    assert main(["show", run_id, "--data-dir", str(tmp_path / "d")]) == 0
    table = capsys.readouterr().out
    assert "dcg@10" in table and "fulltext" in table
    assert "ANN index: exact search (every document vector compared): nothing lost" in table
    assert "paired differences on DCG@10 (as on the Results page):" in table
    assert "95% CI" in table and "adjusted for 2 comparisons" in table and "Holm" not in table
    assert "These figures make 2 comparisons" in table and "The page makes" not in table  # a terminal
    assert main(["runs", "--data-dir", str(tmp_path / "d")]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert "collection" in listed[0] and any(run_id in line and " tiny " in line for line in listed[1:])


def test_searchgrade_home_is_honoured(tmp_path, tiny_beir, monkeypatch, capsys):
    monkeypatch.setenv("SEARCHGRADE_HOME", str(tmp_path / "home"))
    assert main(["evaluate", str(tiny_beir), "--qrels", "--strategies", "fulltext"]) == 0
    assert (tmp_path / "home" / "searchgrade.duckdb").is_file()


def test_export_trec_writes_one_file_per_strategy(tmp_path, tiny_beir, capsys):
    run_id = _evaluate(tiny_beir, tmp_path / "d")
    out = tmp_path / "out"
    assert main(["export", run_id, "--format", "trec", "--out", str(out), "--data-dir", str(tmp_path / "d")]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["ann.trec", "fulltext.trec", "hybrid.trec"]
    first = (out / "fulltext.trec").read_text().splitlines()[0].split()
    assert first[1] == "Q0" and first[3] == "1" and first[5] == run_id
    for fmt in ("csv", "parquet"):
        assert main(["export", run_id, "--format", fmt, "--out", str(out), "--data-dir", str(tmp_path / "d")]) == 0
    import pandas as pd

    frame = pd.read_parquet(out / f"{run_id}-metrics.parquet")
    assert set(frame.columns) >= {"strategy", "query_id", "metric", "k", "value"}


def _one_line_error(capsys, code: int) -> str:
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["evaluate", "/no/such/collection", "--qrels"], "no such file or folder"),
        (["evaluate", "TINY", "--qrels", "--k", "0"], "--k of 0"),
        (["evaluate", "TINY", "--qrels", "--strategies", "ann,bm42"], "bm42"),
        (["evaluate", "TINY", "--qrels", "--ann-index", "lsh"], "lsh"),
        (["evaluate", "TINY"], "--qrels"),
        (["show", "no-such-run"], "no run"),
        (["export", "no-such-run", "--format", "trec", "--out", "OUT"], "no run"),
        (["export", "x", "--format", "xml", "--out", "OUT"], "xml"),
        (["import-vectors", "TINY", "/no/such/vectors.parquet"], "does not exist"),
    ],
)
def test_expected_errors_are_one_line_and_non_zero(tmp_path, tiny_beir, capsys, argv, fragment):
    argv = [str(tiny_beir) if a == "TINY" else str(tmp_path / "o") if a == "OUT" else a for a in argv]
    try:
        code = main([*argv, "--data-dir", str(tmp_path / "d")])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert fragment in _one_line_error(capsys, code)


def test_imported_vectors_build_the_ann_index_with_nothing_embedded(tmp_path, tiny_beir, capsys):
    import numpy as np

    from searchgrade.engine.collections import load_collection
    from searchgrade.indexes.embeddings.encoder import encode, load_embedder

    documents = load_collection(tiny_beir).documents
    vectors = encode(load_embedder("all-MiniLM-L6-v2"), [d.content for d in documents], 32)
    np.savez(tmp_path / "v.npz", ids=np.array([d.doc_id for d in documents]), vectors=vectors)
    data = str(tmp_path / "d")
    capsys.readouterr()
    assert main(["import-vectors", str(tiny_beir), str(tmp_path / "v.npz"), "--data-dir", data]) == 1
    assert "does not say which model" in _one_line_error(capsys, 1)
    assert main(["import-vectors", str(tiny_beir), str(tmp_path / "v.npz"), "--data-dir", data,
                 "--embedding-model", "all-MiniLM-L6-v2"]) == 0
    out = capsys.readouterr().out
    assert "12 vectors of 384 dimensions for tiny filed under sentence-transformers/all-MiniLM-L6-v2" in out
    assert "12 of 12 documents have a vector" in out and "mean cosine 1.0000" in out
    run_id = _evaluate(tiny_beir, data)
    assert Store(data).get_run(run_id).stats["index"]["embedded"] == 0


def test_bad_collection_file_error_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "docs.jsonl"
    bad.write_text('{"_id": "a", "text": "fine"}\n{"_id": "b", "text": \n')
    code = main(["index", str(bad), "--data-dir", str(tmp_path / "d")])
    err = _one_line_error(capsys, code)
    assert "docs.jsonl" in err and "2" in err


def _wait_for_running_run(data_dir: Path, proc, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"searchgrade exited early: {proc.stderr.read()}")
        if (data_dir / "searchgrade.duckdb").exists():
            try:
                runs = Store(data_dir, lock_timeout_s=5).list_runs()
            except Exception:  # noqa: BLE001 - the run's process may hold the file or be creating it
                runs = []
            if runs and runs[0].status == "running":
                return runs[0].run_id
        time.sleep(0.1)
    raise AssertionError("no running run appeared")


def _sigint_as_at_a_terminal() -> None:
    # A shell starts background jobs with SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler: restore the default a user's terminal gives.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_in_the_cli_marks_the_run_cancelled(tmp_path):
    data_dir = tmp_path / "d"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    # Cranfield with ANN: embedding 1,400 documents takes long enough to interrupt.
    proc = subprocess.Popen([*SEARCHGRADE, "evaluate", str(CRANFIELD), "--qrels", "--data-dir",
                             str(data_dir), "--strategies", "ann"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_sigint_as_at_a_terminal)
    run_id = _wait_for_running_run(data_dir, proc)
    # Interrupt during the embedding, not while torch is being imported: an import that catches
    # every exception could swallow the KeyboardInterrupt, and that is not our code to test.
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.extend(iter(lambda: proc.stderr.read(1), "")),
                              daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while "embed:" not in "".join(stderr) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    reader.join(timeout=10)
    err = "".join(stderr)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"run {run_id} cancelled by Ctrl-C" in err and f"searchgrade resume {run_id}" in err
    assert Store(data_dir).get_run(run_id).status == "cancelled"


@pytest.mark.slow
def test_kill_9_leaves_a_run_that_the_next_command_marks_interrupted(tmp_path):
    data_dir = tmp_path / "d"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]),
               SEARCHGRADE_HEARTBEAT_TIMEOUT_S="2")
    proc = subprocess.Popen([*SEARCHGRADE, "evaluate", str(CRANFIELD), "--qrels", "--data-dir",
                             str(data_dir), "--strategies", "ann"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    run_id = _wait_for_running_run(data_dir, proc)
    proc.kill()
    proc.communicate(timeout=60)
    time.sleep(2.5)  # the heartbeat timeout
    out = subprocess.run([*SEARCHGRADE, "runs", "--data-dir", str(data_dir)], capture_output=True,
                         text=True, env=env, check=True).stdout
    assert run_id in out and "interrupted" in out


def _bad_collection(tmp_path: Path, case: str) -> Path:
    from tests.conftest import write_beir

    folder = write_beir(tmp_path / case)
    corpus = folder / "corpus.jsonl"
    if case == "missing_field":
        corpus.write_text('{"_id": "d1", "title": "t", "words": "no text field"}\n')
    elif case == "missing_in_a_line":
        corpus.write_text('{"_id": "d1", "text": "a"}\n{"_id": "d2", "words": "b"}\n')
    elif case == "duplicate_id":
        corpus.write_text('{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n')
    elif case == "undecodable":
        corpus.write_bytes(b'{"_id": "d1", "text": "caf\xe9"}\n')
    elif case == "empty_corpus":
        corpus.write_text("")
    elif case == "bad_grade":
        (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\thigh\n")
    return folder


@pytest.mark.parametrize(
    ("case", "fragments"),
    [
        ("missing_field", ["corpus.jsonl: no document text column", "'words'", "--text-field"]),
        ("missing_in_a_line", ["corpus.jsonl:2: no 'text' field", "--text-field"]),
        ("duplicate_id", ["corpus.jsonl:2", "'d1'", "line 1"]),
        ("undecodable", ["corpus.jsonl:1", "UTF-8"]),
        ("empty_corpus", ["corpus.jsonl", "no documents"]),
        ("bad_grade", ["qrels.tsv:2", "'high'"]),
    ],
)
def test_each_bad_collection_gives_one_line_and_a_non_zero_exit(tmp_path, capsys, case, fragments):
    folder = _bad_collection(tmp_path, case)
    code = main(["evaluate", str(folder), "--qrels", "--data-dir", str(tmp_path / "d")])
    err = _one_line_error(capsys, code)
    for fragment in fragments:
        assert fragment in err, err
    assert Store(tmp_path / "d").list_runs() == []  # nothing was started, so nothing is half-written


def test_judgments_naming_unknown_documents_are_counted_not_fatal(tmp_path, tiny_beir, capsys):
    with open(tiny_beir / "qrels.tsv", "a") as f:
        f.write("q1\tno-such-doc\t2\nnot-a-query\td1\t1\n")
    assert main(["evaluate", str(tiny_beir), "--qrels", "--strategies", "fulltext",
                 "--data-dir", str(tmp_path / "d")]) == 0
    err = capsys.readouterr().err
    assert "1 judgment names a document not in the corpus (e.g. line 12: document 'no-such-doc')" in err
    assert "dropped 1 judgment naming queries not in queries.jsonl" in err
