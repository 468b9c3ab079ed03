"""`searchgrade gate`: exit 1 on a real regression, 0 on the same configuration run twice, 2 on bad input."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from searchgrade.cli import main
from searchgrade.engine.collections import load_collection
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from searchgrade.indexes.settings import IndexSettings
from tests.conftest import CRANFIELD
from tests.pages.synthetic import tiny_spec, write_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cranfield_runs(tmp_path_factory):
    """BM25 on 60 Cranfield queries: normal, with deliberately bad parameters, and normal again."""
    home = tmp_path_factory.mktemp("gate")
    store = Store(home)
    collection = load_collection(CRANFIELD)
    runs = {}
    for name, settings in (("normal", IndexSettings()), ("degraded", IndexSettings(bm25_k1=0.05, bm25_b=0.0)),
                           ("normal again", IndexSettings())):
        config = RunConfig(name=name, strategies=("fulltext",), max_queries=60, index=settings, n_bootstrap=200)
        runs[name] = run_evaluation(collection, config, store, home).run_id
    return home, runs


def _gate(home, *args):
    return main(["gate", "--data-dir", str(home), *args])


def test_gate_fails_on_degraded_bm25_against_a_normal_run(cranfield_runs, capsys, tmp_path):
    home, runs = cranfield_runs
    junit = tmp_path / "reports" / "gate.xml"
    code = _gate(home, "--baseline", runs["normal"], "--candidate", runs["degraded"], "--junit", str(junit))
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 1
    assert len(out) == 1 and out[0].startswith("FAIL  fulltext") and "ndcg@10" in out[0]
    # The margin form in words: the interval (one strategy: nothing to adjust for) lies below -margin.
    assert "(95% CI -" in out[0] and "adjusted" not in out[0]
    assert "margin 0.0100: the interval lies entirely below -0.0100: worse by more than the margin" in out[0]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1"
    assert suite.find("testcase").get("name") == "fulltext"
    assert suite.find("testcase/failure") is not None


def test_gate_passes_two_runs_of_the_same_configuration(cranfield_runs, capsys):
    home, runs = cranfield_runs
    code = _gate(home, "--baseline", runs["normal"], "--candidate", runs["normal again"], "--margin", "0.01")
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0
    assert len(out) == 1 and out[0].startswith("PASS  fulltext") and "change +0.0000" in out[0]
    assert "(95% CI +0.0000 to +0.0000)" in out[0] and "the interval reaches above -0.0100" in out[0]


def test_latest_complete_picks_the_newest_earlier_run_of_the_collection(cranfield_runs, capsys):
    home, runs = cranfield_runs
    assert _gate(home, "--baseline", "latest-complete", "--candidate", runs["normal again"]) == 0
    assert f"against baseline {runs['degraded']}" in capsys.readouterr().err  # better than the degraded one
    assert _gate(home, "--baseline", "latest-complete", "--candidate", runs["normal"]) == 2
    assert "no complete run of collection" in capsys.readouterr().err


def test_gate_adjusts_for_the_strategies_checked_and_honours_the_metric_direction(tmp_path, capsys):
    store = Store(tmp_path)
    a = write_run(store, tiny_spec(name="a"))
    b = write_run(store, tiny_spec(name="b"))
    assert _gate(tmp_path, "--baseline", a, "--candidate", b, "--metric", "pct_not_relevant@3") == 0
    captured = capsys.readouterr()
    out = captured.out.strip().splitlines()
    assert [line.split()[1] for line in out] == ["ann", "fulltext", "ann_rerank"]
    assert "adjusted for 3 strategies checked, lies entirely above +margin (lower is better)" in captured.err
    # Two queries: no test of three comparisons could tell anything (2**(1-n) >= 0.05 / 3).
    assert all("change +0.0000 (no 95% CI from 2 queries: a verdict over 3 comparisons needs at least 7)" in line
               and "too few queries to show a regression  p = 1.0000" in line for line in out), out


@pytest.mark.parametrize(("args", "message"), [
    (["--metric", "ndcg@x"], "k must be a positive integer"),
    (["--metric", "nope@10"], "unknown metric"),
    (["--strategy", "hybrid"], "not in both runs"),
    (["--margin", "-1"], "negative"),
    (["--metric", "dcg@50"], "above run"),
])
def test_gate_bad_input_exits_2_with_one_line(tmp_path, capsys, args, message):
    store = Store(tmp_path)
    a, b = write_run(store, tiny_spec(name="a")), write_run(store, tiny_spec(name="b"))
    assert _gate(tmp_path, "--baseline", a, "--candidate", b, "--metric", "ndcg@3", *args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_gate_refuses_runs_without_shared_queries(tmp_path, capsys):
    store = Store(tmp_path)
    a = write_run(store, tiny_spec(name="a"))
    spec = tiny_spec(name="b")
    spec.queries = [q.__class__(q.query_id, q.text + " (other)", q.query_type, q.source_doc_id) for q in spec.queries]
    b = write_run(store, spec)
    assert _gate(tmp_path, "--baseline", a, "--candidate", b, "--metric", "ndcg@3") == 2
    assert "share no query" in capsys.readouterr().err
