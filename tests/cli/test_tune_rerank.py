"""Rerank-depth trials reorder with the cross-encoder scores computed before: over every trial and
fold, each (query, document) pair is scored once."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from searchgrade.indexes.rerank.cross_encoder import CrossEncoderScorer
from tests.conftest import write_beir
from tests.indexes.conftest import tiny_cross_encoder_dir  # noqa: F401 - a fixture


@pytest.mark.slow
def test_rerank_depth_trials_score_each_pair_once(tmp_path, tiny_cross_encoder_dir, capsys, monkeypatch):  # noqa: F811
    folder = write_beir(tmp_path / "tiny")
    data = tmp_path / "d"
    assert main(["evaluate", str(folder), "--qrels", "--data-dir", str(data), "--strategies",
                 "fulltext,fulltext_rerank", "--reranker-model", str(tiny_cross_encoder_dir)]) == 0
    run_id = Store(data).list_runs()[0].run_id
    scored: Counter = Counter()
    score_pairs = CrossEncoderScorer.score_pairs

    def counting(self, pairs):
        scored.update((p.query_id, p.doc_id) for p in pairs)
        return score_pairs(self, pairs)

    monkeypatch.setattr(CrossEncoderScorer, "score_pairs", counting)
    capsys.readouterr()
    assert main(["tune", run_id, "--strategy", "fulltext_rerank", "--trials", "3", "--format", "json",
                 "--data-dir", str(data)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["trials"] == 18 and set(report["best"]) == {"rerank_depth"}
    assert report["start"] == {"rerank_depth": 50} and report["configuration"]["flags"].startswith("--rerank-depth ")
    assert scored and max(scored.values()) == 1
