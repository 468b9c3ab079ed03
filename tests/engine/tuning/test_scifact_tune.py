"""The must-show on a SciFact subset small enough for CI: fusion and BM25 of the hybrid tuned on
the tuning queries, the held-out comparison printed, the tuned hybrid's held-out nDCG@10 with its
paired CI against the default hybrid, and no held-out grade read while tuning (bench/bench_tune.py
makes the full 300-query figures in bench/RESULTS.md)."""

from __future__ import annotations

import math

import pytest

from searchgrade.cli import main
from searchgrade.engine.collections import load_collection
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from searchgrade.engine.tuning import grades as grades_module
from tests.conftest import DEMO

SPACE = """strategy = "hybrid"
[params]
method = ["rrf", "wrrf", "combsum", "combmnz", "convex"]
norm = ["minmax", "zscore", "sum"]
weight = [0.0, 1.0]
fusion_depth = [10, 100]
bm25_k1 = [0.5, 2.0]
bm25_b = [0.3, 1.0]
"""
TRIALS = 8


@pytest.mark.slow
def test_scifact_hybrid_tuned_on_tuning_queries_and_compared_on_held_out_ones(tmp_path, capsys, monkeypatch):
    store = Store(tmp_path)
    config = RunConfig(strategies=("ann", "fulltext", "hybrid"), max_queries=60, n_bootstrap=200)
    run_id = run_evaluation(load_collection(DEMO), config, store, tmp_path).run_id
    space = tmp_path / "space.toml"
    space.write_text(SPACE, encoding="utf-8")
    # Every grade read, and whether the last trial had ended when it was made.
    reads: list[tuple[str, bool]] = []
    trials_done = [0]
    of = grades_module.Grades.of

    def recording(self, query_id):
        reads.append((query_id, trials_done[0] >= TRIALS))
        return of(self, query_id)

    monkeypatch.setattr(grades_module.Grades, "of", recording)
    add = Store.add_tuning_trial

    def counting(self, study_id, trial):
        trials_done[0] += 1
        return add(self, study_id, trial)

    monkeypatch.setattr(Store, "add_tuning_trial", counting)
    capsys.readouterr()
    assert main(["tune", run_id, "--space", str(space), "--trials", str(TRIALS), "--data-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    report = store.tuning_studies(run_id)[0]["report"]
    heldout = set(report["split"]["heldout"])
    assert len(heldout) == 18 and not heldout & set(report["split"]["tuning"])
    assert [q for q, after in reads if q in heldout and not after] == []
    assert {q for q, after in reads if after} == heldout and report["heldout_grade_reads"] == 0
    assert "held out (18 queries):" in printed and "held-out grades read during tuning: 0" in printed
    assert report["start"] == {"fusion": "rrf(k=60,depth=100)", "bm25_k1": 1.5, "bm25_b": 0.75}
    assert set(report["best"]) == {"fusion", "bm25_k1", "bm25_b"} and report["trials"] == TRIALS
    h = report["heldout"]
    tuned, diff = h["tuned"], h["difference"]
    assert 0 < tuned["ci_low"] <= tuned["value"] <= tuned["ci_high"] <= 1
    assert math.isfinite(diff["ci_low"]) and diff["ci_low"] <= diff["value"] <= diff["ci_high"]
    assert f"tuned  ndcg@10 {tuned['value']:.4f}" in printed
    assert (report["recommendation"] == "tuned") == (diff["ci_low"] > 0)
