"""`searchgrade tune` on a stored run of the tiny collection: the JSON shape, resuming from the
store, BM25 trials on the same index, and bad space files (one line each)."""

from __future__ import annotations

import json

import pytest

from searchgrade.cli import main
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store import Store
from tests.conftest import write_beir


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    folder = write_beir(tmp_path_factory.mktemp("beir") / "tiny")
    data = tmp_path_factory.mktemp("data")
    assert main(["evaluate", str(folder), "--qrels", "--data-dir", str(data), "--strategies",
                 "ann,fulltext,hybrid"]) == 0
    return Store(data).list_runs()[0].run_id, data


def tune_json(capsys, run_id, data, *extra):
    capsys.readouterr()
    assert main(["tune", run_id, "--format", "json", "--data-dir", str(data), *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_tune_json_has_the_documented_shape_and_a_second_call_resumes(tiny_run, capsys):
    run_id, data = tiny_run
    report = tune_json(capsys, run_id, data, "--strategy", "hybrid", "--trials", "3")
    assert set(report) >= {"split", "trials", "best", "heldout"}
    assert set(report["split"]) >= {"tuning", "heldout"} and report["split"]["method"] == "k-fold"
    assert sorted(report["split"]["heldout"]) == ["q1", "q2", "q3", "q4", "q5"]
    h = report["heldout"]
    assert h["metric"] == "ndcg@10"
    for key in ("start", "tuned"):
        assert set(h[key]) == {"value", "ci_low", "ci_high"}
    assert set(h["difference"]) == {"value", "ci_low", "ci_high", "p"}
    # 5 folds and the study on every query, 3 trials each.
    assert report["trials"] == 18 and report["heldout_grade_reads"] == 0
    assert "fusion" in report["best"] and report["configuration"]["flags"].startswith("--fusion ")
    # "Evaluate this configuration": the run's configuration with the tuned fusion string.
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.tuning.apply import tuned_run_config

    run = Store(data).get_run(run_id)
    tuned = tuned_run_config(run, report)
    assert tuned.index.fusion == report["best"]["fusion"] and tuned.strategies == ("ann", "fulltext", "hybrid")
    assert tuned.name.endswith("· hybrid tuned")
    assert {**tuned.to_json(), "index": None, "name": None} == {**RunConfig.from_json(run.config).to_json(),
                                                                 "index": None, "name": None}
    again = tune_json(capsys, run_id, data, "--strategy", "hybrid", "--trials", "3")
    assert again["study"] == report["study"] and again["resumed"] and again["resumed_trials"] == 18
    assert again["best"] == report["best"] and again["trials"] == 18
    more = tune_json(capsys, run_id, data, "--strategy", "hybrid", "--trials", "4")
    assert more["trials"] == 24 and more["resumed_trials"] == 18
    assert len(Store(data).tuning_trials(report["study"])) == 24


def test_bm25_trials_search_the_same_index_and_leave_no_weights_files(tiny_run, capsys):
    run_id, data = tiny_run
    before = sorted(p.name for p in data.glob("indexes/*/weights-*"))
    report = tune_json(capsys, run_id, data, "--strategy", "fulltext", "--trials", "2", "--seed", "3")
    assert set(report["best"]) == {"bm25_k1", "bm25_b"} and report["trials"] == 12
    assert report["configuration"]["flags"].startswith("--bm25-k1 ")
    from searchgrade.engine.tuning.apply import tuned_run_config

    tuned = tuned_run_config(Store(data).get_run(run_id), report)
    assert (tuned.index.bm25_k1, tuned.index.bm25_b) == (report["best"]["bm25_k1"], report["best"]["bm25_b"])
    assert sorted(p.name for p in data.glob("indexes/*/weights-*")) == before


@pytest.mark.parametrize(("space", "words"), [
    ("[params]\nbm25_k3 = [0.1, 0.2]\n", "unknown parameter 'bm25_k3' for strategy fulltext: its parameters are bm25_k1, bm25_b"),
    ("[params]\nbm25_k1 = [2.0, 0.5]\n", "bm25_k1 = [2.0, 0.5] is an empty range"),
    ("[params]\nbm25_b = [0.5, 1.5]\n", "leaves the allowed [0, 1] of bm25_b"),
    ("[params]\nmethod = [\"borda\"]\n", "unknown parameter 'method' for strategy fulltext"),
    ("[params\n", "is not valid TOML"),
    ("strategy = \"fulltext\"\n", "has no [params] table"),
])
def test_a_bad_space_file_is_one_line_and_non_zero(tiny_run, tmp_path, capsys, space, words):
    run_id, data = tiny_run
    path = tmp_path / "space.toml"
    path.write_text(space, encoding="utf-8")
    capsys.readouterr()
    code = main(["tune", run_id, "--strategy", "fulltext", "--space", str(path), "--data-dir", str(data)])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and words in err, err


def test_exact_ann_has_nothing_to_tune(tiny_run, capsys):
    run_id, data = tiny_run
    capsys.readouterr()
    assert main(["tune", run_id, "--strategy", "ann", "--data-dir", str(data)]) != 0
    assert "nothing to change" in capsys.readouterr().err


def test_an_ivf_index_tunes_its_nprobe_with_the_queries_embedded_once(tmp_path, capsys):
    folder = write_beir(tmp_path / "tiny")
    data = tmp_path / "d"
    assert main(["evaluate", str(folder), "--qrels", "--data-dir", str(data), "--strategies", "ann",
                 "--ann-index", "ivf", "--ivf-nprobe", "1"]) == 0
    run_id = Store(data).list_runs()[0].run_id
    report = tune_json(capsys, run_id, data, "--strategy", "ann", "--trials", "2")
    assert report["start"] == {"ivf_nprobe": 1} and set(report["best"]) == {"ivf_nprobe"}
    assert report["configuration"]["flags"].startswith("--ann-index ivf --ivf-nprobe ")


def test_a_suite_tunes_its_latest_complete_run_on_its_frozen_queries(tiny_run, capsys):
    run_id, data = tiny_run
    assert main(["suite", "create", "tiny-suite", "--from", run_id, "--data-dir", str(data)]) == 0
    capsys.readouterr()
    assert main(["suite", "run", "tiny-suite", "--data-dir", str(data)]) == 0
    store = Store(data)
    latest = store.suite_entries("tiny-suite")[-1]["run_id"]
    assert latest != run_id and store.get_run(latest).status == "complete"
    frozen = store.get_suite("tiny-suite").query_ids
    capsys.readouterr()
    assert main(["tune", "tiny-suite", "--strategy", "fulltext", "--trials", "1", "--data-dir", str(data)]) == 0
    out, err = capsys.readouterr()
    assert f"suite tiny-suite's latest complete run {latest} ({len(frozen)} frozen queries)" in err
    assert f"of suite tiny-suite's latest complete run {latest}" in out
    report = tune_json(capsys, "tiny-suite", data, "--strategy", "fulltext", "--trials", "1")
    assert report["run"] == latest and report["suite"] == "tiny-suite"
    assert sorted(report["split"]["heldout"]) == sorted(frozen)
    assert tune_json(capsys, run_id, data, "--strategy", "fulltext", "--trials", "1")["suite"] is None


@pytest.mark.parametrize(("name", "words"), [
    ("prefix", "is both run "),
    ("nothing-here", "'nothing-here' is neither a run nor a suite"),
    ("empty-suite", "has no complete run to tune"),
])
def test_a_name_that_is_both_or_neither_or_a_suite_without_a_run_is_one_line(tiny_run, capsys, name, words):
    run_id, data = tiny_run
    store = Store(data)
    if name == "prefix":
        name = run_id  # a suite named as the run
        if name not in {s.name for s in store.list_suites()}:
            assert main(["suite", "create", name, "--from", run_id, "--data-dir", str(data)]) == 0
    if name == "empty-suite" and name not in {s.name for s in store.list_suites()}:
        assert main(["suite", "create", name, "--from", run_id, "--data-dir", str(data)]) == 0
        source = store.suite_entries(name)[0]
        store.update_suite_entry(source["entry_id"], status="could not evaluate")
    capsys.readouterr()
    assert main(["tune", name, "--trials", "1", "--data-dir", str(data)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err


def test_a_suites_frozen_queries_are_the_only_ones_tuned_and_held_out(tiny_run, capsys):
    from searchgrade.engine.tuning.study import run_study

    run_id, data = tiny_run
    report = run_study(Store(data), run_id, data, strategy="fulltext", trials=1, only_queries=("q1", "q3", "q4"))
    assert sorted(report["split"]["heldout"]) == ["q1", "q3", "q4"] and report["split"]["method"] == "k-fold"
    with pytest.raises(SearchGradeError, match="has none of the 1 queries asked for"):
        run_study(Store(data), run_id, data, strategy="fulltext", trials=1, only_queries=("nope",))
