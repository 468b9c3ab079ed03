"""A full-text variant over chunks is tuned like the built-in: its own k1 and b over its own chunk
index, the result written into its declaration (not the run's --bm25-k1)."""

from __future__ import annotations

import json

from searchgrade.cli import main
from searchgrade.engine.store import Store
from searchgrade.engine.tuning.apply import tuned_run_config
from tests.conftest import write_beir

TABLE = ('[strategy.bm25-sentences]\nkind = "fulltext"\nbm25_k1 = 1.2\n'
         'chunking = { method = "sentences", size = 1, overlap = 0 }\n')


def test_a_chunked_fulltext_variant_is_tuned_over_its_chunks_and_the_result_goes_into_its_declaration(
        tmp_path, capsys):
    folder = write_beir(tmp_path / "tiny")
    strategies = tmp_path / "variants.toml"
    strategies.write_text(TABLE, encoding="utf-8")
    data = tmp_path / "data"
    assert main(["evaluate", str(folder), "--qrels", "--data-dir", str(data), "--strategies-file", str(strategies),
                 "--strategies", "fulltext,bm25-sentences"]) == 0
    run_id = Store(data).list_runs()[0].run_id
    capsys.readouterr()
    assert main(["tune", run_id, "--strategy", "bm25-sentences", "--trials", "3", "--format", "json",
                 "--data-dir", str(data)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["best"]) == {"bm25_k1", "bm25_b"} and report["kind"] == "fulltext"
    assert report["start"] == {"bm25_k1": 1.2, "bm25_b": 0.75}  # the variant's own, not the run's 1.5
    snippet = report["configuration"]["snippet"]
    assert "[strategy.bm25-sentences]" in snippet and f"bm25_k1 = {report['best']['bm25_k1']:g}" in snippet
    assert 'chunking = { method = "sentences", size = 1, overlap = 0 }' in snippet
    assert "flags" not in report["configuration"]
    tuned = tuned_run_config(Store(data).get_run(run_id), report)
    assert tuned.declared["bm25-sentences"]["bm25_k1"] == report["best"]["bm25_k1"]
    assert tuned.index.bm25_k1 == 1.5  # the built-in's setting is not the variant's
