"""The demo (BEIR SciFact) reproduces the published nDCG@10 of each strategy.

Published: BM25 0.665-0.684, all-MiniLM-L6-v2 dense 0.645. With plain rank_bm25 over lowercase
\\w+ tokens the dataset notes give 0.652, and RRF (k = 60) of both top-100 lists 0.684.
The demo ships its document vectors, so this run embeds only the 300 queries.
"""

from __future__ import annotations

import pytest

from searchgrade.engine.collections import load_collection
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from tests.conftest import DEMO


@pytest.mark.slow
def test_scifact_ndcg_at_10_matches_the_published_figures(tmp_path):
    store = Store(tmp_path)
    config = RunConfig(strategies=("ann", "fulltext", "hybrid"), n_bootstrap=1000)
    outcome = run_evaluation(load_collection(DEMO), config, store, tmp_path)
    run = store.get_run(outcome.run_id)
    assert run.stats["index"]["embedded"] == 0, "the shipped demo vectors should cover every document"
    ndcg = {r["strategy"]: r["value"] for r in store.metric_summary(outcome.run_id, 10)
            if r["metric"] == "ndcg"}
    assert ndcg["fulltext"] >= 0.65
    assert ndcg["ann"] == pytest.approx(0.645, abs=0.01)
    assert ndcg["hybrid"] >= max(ndcg["ann"], ndcg["fulltext"])
    assert run.stats["queries"] == 300
