"""A real run, exported as TREC files, scores the same in ir_measures as in our store (to 1e-6)."""

from __future__ import annotations

import ir_measures
import pytest

from searchgrade.engine.collections import load_collection
from searchgrade.engine.export import export_run
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from tests.conftest import CRANFIELD


def test_stored_metrics_match_ir_measures_on_the_exported_cranfield_run(tmp_path):
    from ir_measures import AP, RR, P, Qrel, R, nDCG

    collection = load_collection(CRANFIELD)
    store = Store(tmp_path / "d")
    config = RunConfig(strategies=("fulltext",), n_bootstrap=200)
    run_id = run_evaluation(collection, config, store, tmp_path / "d").run_id
    (trec,) = export_run(store, run_id, "trec", tmp_path / "out")
    run = store.get_run(run_id)
    assert run.threshold == 2  # graded 0..4: relevant at >= 2

    qrels = [Qrel(q, d, g) for q, judged in collection.qrels.items() for d, g in judged.items()]
    exported = list(ir_measures.read_trec_run(str(trec)))
    t = run.threshold
    pairs = {
        "ndcg": nDCG @ 10, "precision": P(rel=t) @ 10, "recall": R(rel=t) @ 10,
        "mrr": RR(rel=t) @ 10, "map": AP(rel=t) @ 10,
    }
    ours = {(r["metric"], r["query_id"]): r["value"] for r in store.metric_values(run_id, k=10)
            if r["strategy"] == "fulltext"}
    compared = 0
    for metric, measure in pairs.items():
        for result in ir_measures.iter_calc([measure], qrels, exported):
            assert ours[(metric, result.query_id)] == pytest.approx(result.value, abs=1e-6), (
                metric, result.query_id)
            compared += 1
    assert compared >= 5 * 200
