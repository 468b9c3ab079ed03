"""A run of variants on a few hundred SciFact abstracts: chunked and whole-document variants beside
the built-ins, each scoring in ir_measures as in our store on its exported document-level run, each
with its cost in `show --format json`, and the matched chunks kept for the drill-down."""

from __future__ import annotations

import json

import ir_measures
import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from searchgrade.viewmodels.drilldown import query_detail
from tests.conftest import DEMO


def small_scifact(folder, n_queries=40, n_docs=300):
    """The first queries of the demo with all their judged abstracts, padded with others to n_docs."""
    folder.mkdir()
    qrels = [line.rstrip("\n").split("\t") for line in (DEMO / "qrels.tsv").read_text().splitlines()[1:]]
    queries = sorted({q for q, _, _ in qrels}, key=int)[:n_queries]
    judged = {d for q, d, _ in qrels if q in queries}
    docs = [json.loads(line) for line in (DEMO / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    kept = [d for d in docs if d["_id"] in judged]
    kept += [d for d in docs if d["_id"] not in judged][: n_docs - len(kept)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in kept), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(line + "\n" for line in (DEMO / "queries.jsonl").read_text(
        encoding="utf-8").splitlines() if json.loads(line)["_id"] in queries), encoding="utf-8")
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, d, g in qrels if q in queries), encoding="utf-8")
    return folder


@pytest.mark.slow
def test_variants_in_one_run_score_as_ir_measures_with_their_costs_and_matched_chunks(tmp_path, capsys,
                                                                                      static_model_dir):
    collection = small_scifact(tmp_path / "scifact-300")
    strategies = tmp_path / "variants.toml"
    strategies.write_text(f'''
[strategy.static]
kind = "ann"
embedding_model = "{static_model_dir}"

[strategy.static-chunks]
kind = "ann"
embedding_model = "{static_model_dir}"
chunking = {{ method = "tokens", size = 64, overlap = 8 }}
aggregate = "max"

[strategy.bm25-sentences]
kind = "fulltext"
chunking = {{ method = "sentences", size = 3, overlap = 1 }}
aggregate = "sum_top2"

[strategy.both-chunked]
kind = "hybrid"
ann = "static-chunks"
fulltext = "bm25-sentences"
''', encoding="utf-8")
    data = tmp_path / "data"
    names = ["fulltext", "static", "static-chunks", "bm25-sentences", "both-chunked"]
    assert main(["evaluate", str(collection), "--qrels", "--strategies-file", str(strategies), "--strategies",
                 ",".join(names), "--data-dir", str(data)]) == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]

    assert main(["show", run_id, "--format", "json", "--data-dir", str(data)]) == 0
    shown = json.loads(capsys.readouterr().out)
    costs = {c["strategy"]: c for c in shown["costs"]}
    assert set(costs) == set(names)
    assert all(list(c) == ["strategy", "index_build_s", "items_per_s", "index_bytes", "p50_ms", "p95_ms",
                           "chunks_per_doc"] for c in shown["costs"])
    for name in names:
        assert costs[name]["index_build_s"] > 0 and costs[name]["index_bytes"] > 0
        assert 0 < costs[name]["p50_ms"] <= costs[name]["p95_ms"]
    assert costs["static"]["chunks_per_doc"] == 1.0 and costs["static-chunks"]["chunks_per_doc"] > 2
    assert costs["static"]["items_per_s"] > 0 and costs["fulltext"]["items_per_s"] is None
    assert costs["both-chunked"]["chunks_per_doc"] is None  # two chunkings fused: no one figure
    assert costs["both-chunked"]["index_bytes"] == costs["static-chunks"]["index_bytes"] + \
        costs["bm25-sentences"]["index_bytes"]

    # Every strategy's figures are trec_eval's on its exported document-level run (the fusion's too: the
    # export keeps the stored ranking where RRF gives equal scores).
    assert main(["export", run_id, "--format", "trec", "--out", str(tmp_path / "out"), "--data-dir", str(data)]) == 0
    capsys.readouterr()
    store = Store(data)
    run = store.get_run(run_id)
    qrels = [ir_measures.Qrel(q, d, int(g)) for q, d, g in (line.split("\t") for line in
                                                            (collection / "qrels.tsv").read_text().splitlines()[1:])]
    ours = {(r["strategy"], r["query_id"]): r["value"] for r in store.metric_values(run_id, k=10)
            if r["metric"] == "ndcg"}
    for name in names:
        exported = list(ir_measures.read_trec_run(str(tmp_path / "out" / f"{name}.trec")))
        docs_per_query: dict[str, list[str]] = {}
        for row in exported:
            docs_per_query.setdefault(row.query_id, []).append(row.doc_id)
        assert all(len(d) == len(set(d)) for d in docs_per_query.values())  # one line per document, not per chunk
        values = list(ir_measures.iter_calc([ir_measures.nDCG @ 10], qrels, exported))
        assert len(values) == run.stats["queries"]
        for result in values:
            assert ours[(name, result.query_id)] == pytest.approx(result.value, abs=1e-6), (name, result.query_id)

    # The drill-down shows the chunk each chunked result was matched by, from the document's text.
    query = store.queries(run_id)[0]["query_id"]
    detail = query_detail(store, run_id, query)
    assert set(detail.passages) == {"static-chunks", "bm25-sentences"}
    top = detail.results["static-chunks"]["Doc id"].iloc[0]
    words, text = detail.matched_chunk("static-chunks", top)
    assert words.startswith("matched chunk ") and text and text in detail.documents[top]["text"]
    assert detail.matched_chunk("static", top) is None
