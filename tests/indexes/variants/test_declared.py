"""Variants are declared like any strategy: checked before any work, built sharing what they can,
skipped alone when their model cannot load, each with its cost."""

from __future__ import annotations

import json

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.build import build_searchers
from searchgrade.indexes.declared.spec import load_strategies_file, parse_spec
from searchgrade.indexes.registry import registry_for
from searchgrade.indexes.settings import IndexSettings
from searchgrade.indexes.variants import components
from searchgrade.indexes.variants.costs import IndexCost, strategy_costs
from tests.indexes.variants.conftest import QUERY_TEXTS


def test_the_issue_form_declares_variants_with_their_chunking_and_aggregate(tmp_path, static_model_dir):
    path = tmp_path / "variants.toml"
    path.write_text(f'''
[strategy.minilm-chunks]
kind = "ann"
embedding_model = "all-MiniLM-L6-v2"
chunking = {{ method = "tokens", size = 128, overlap = 16 }}
aggregate = "max"

[strategy.static]
kind = "ann"
embedding_model = "{static_model_dir}"

[strategy.bm25-passages]
kind = "fulltext"
bm25_k1 = 1.2
chunking = {{ method = "sentences", size = 4, overlap = 1 }}
aggregate = "sum_top2"

[strategy.both]
kind = "hybrid"
ann = "minilm-chunks"
fulltext = "bm25-passages"
fusion = "rrf"
''', encoding="utf-8")
    specs = load_strategies_file(path)
    assert specs["minilm-chunks"].options["chunking"] == {"method": "tokens", "size": 128, "overlap": 16}
    assert specs["static"].options["chunking"] is None and specs["static"].options["embedding_backend"] is None
    assert specs["bm25-passages"].options["bm25_k1"] == 1.2 and specs["bm25-passages"].options["bm25_b"] is None
    assert specs["both"].options["inputs"] == ["minilm-chunks", "bm25-passages"]
    registry = registry_for(specs)
    assert {registry.info(n).kind for n in specs} == {"ann", "fulltext", "hybrid"}


@pytest.mark.parametrize(("table", "words"), [
    ({"kind": "ann", "chunking": {"method": "tokens", "size": 128, "overlap": 128}},
     "chunking: overlap of 128 must be at least 0 and less than size (128 tokens)"),
    ({"kind": "ann", "chunking": {"method": "words", "size": 128}}, "chunking: method 'words' is not known"),
    ({"kind": "fulltext", "aggregate": "mean"}, "aggregate: 'mean' is not known: use one of max, sum_top2, first"),
    ({"kind": "ann", "embedding_model": "./no/such/model"}, "embedding_model './no/such/model' does not exist"),
    ({"kind": "ann", "embedding_backend": "tensorrt"}, "embedding backend 'tensorrt' is not known"),
    ({"kind": "ann", "ann_index": "lsh"}, "ann_index 'lsh' is not known"),
    ({"kind": "fulltext", "bm25_b": 2.0}, "bm25_b must be between 0 and 1"),
    ({"kind": "hybrid", "ann": "v1", "inputs": ["a", "b"]}, "either with inputs = [...] or with ann = / fulltext ="),
])
def test_a_bad_variant_is_one_line_before_any_work(table, words):
    with pytest.raises(SearchGradeError) as caught:
        parse_spec("v", table, "variants.toml")
    message = str(caught.value)
    assert message.startswith("variants.toml: [strategy.v]: ") and words in message and "\n" not in message


def test_a_folder_that_is_no_embedding_model_is_one_line(tmp_path, static_model_dir):
    reranker = tmp_path / "my-reranker"
    (reranker / "models").mkdir(parents=True)
    (reranker / "card.json").write_text(json.dumps({}))
    with pytest.raises(SearchGradeError, match=r"\[strategy.v\]: embedding_model '.*my-reranker' is a trained reranker"):
        parse_spec("v", {"kind": "ann", "embedding_model": str(reranker)})
    with pytest.raises(SearchGradeError, match="model2vec static model, which runs no transformer"):
        parse_spec("v", {"kind": "ann", "embedding_model": str(static_model_dir), "embedding_backend": "onnx-int8"})


def build(abstracts, tmp_path, tables, strategies=None):
    specs = {name: parse_spec(name, table) for name, table in tables.items()}
    return build_searchers(abstracts, IndexSettings(), tmp_path, strategies=strategies or list(tables),
                           registry=registry_for(specs))


def test_a_variant_whose_model_cannot_load_is_skipped_with_the_reason_and_the_others_run(abstracts, tmp_path,
                                                                                          static_model_dir):
    built = build(abstracts, tmp_path, {
        "gone": {"kind": "ann", "embedding_model": "nobody/no-such-model"},
        "gone-chunks": {"kind": "ann", "embedding_model": "nobody/no-such-model",
                        "chunking": {"method": "tokens", "size": 64}},
        "static": {"kind": "ann", "embedding_model": str(static_model_dir)},
    }, ["gone", "gone-chunks", "static", "fulltext"])
    assert set(built.skipped) == {"gone", "gone-chunks"}
    for reason in built.skipped.values():
        assert "embedding model 'nobody/no-such-model' could not be loaded" in reason and "\n" not in reason
        assert "pass a local model folder" in reason
    assert list(built.searchers) == ["static", "fulltext"]
    assert built.searchers["static"].search(QUERY_TEXTS[:1], 5)[0].docs


def test_variants_share_their_indexes_and_chunks_and_an_unchanged_variant_is_the_builtin(abstracts, tmp_path,
                                                                                         static_model_dir, monkeypatch):
    loads = []
    real = components.load_embedder
    monkeypatch.setattr(components, "load_embedder", lambda *a, **k: loads.append(a[0]) or real(*a, **k))
    chunks = {"method": "tokens", "size": 64, "overlap": 8}
    built = build(abstracts, tmp_path, {
        "same-as-fulltext": {"kind": "fulltext"},
        "max": {"kind": "ann", "embedding_model": str(static_model_dir), "chunking": chunks},
        "sum": {"kind": "ann", "embedding_model": str(static_model_dir), "chunking": chunks, "aggregate": "sum_top2"},
    }, ["fulltext", "same-as-fulltext", "max", "sum"])
    nodes = built.nodes
    assert nodes["same-as-fulltext"].searcher is nodes["fulltext"].searcher  # one index, the built-in's
    assert nodes["max"].component is nodes["sum"].component  # one chunking, one embedding, one index
    assert loads == [str(static_model_dir)]  # the model loaded once for both
    assert built.costs["max"] == built.costs["sum"]
    assert built.costs["max"]["chunks_per_doc"] > 1 and built.costs["fulltext"]["chunks_per_doc"] == 1.0
    assert built.costs["max"]["items_per_s"] > 0 and built.costs["max"]["index_bytes"] > 0
    again = build(abstracts, tmp_path, {"max": {"kind": "ann", "embedding_model": str(static_model_dir),
                                                "chunking": chunks}})
    assert again.costs["max"]["reused"] and again.costs["max"]["items_per_s"] is None  # nothing embedded


def cost(key, build_s, embedded=0, encode_s=0.0, items=10, size=100):
    return IndexCost(key, build_s, embedded, 0, encode_s, items, 10, size, False)


def test_a_strategys_cost_counts_each_index_it_searches_once():
    own = {"ann": cost("A", 2.0, 100, 4.0, 10, 1000), "fulltext": cost("B", 1.0, size=500),
           "chunks": cost("C", 3.0, 40, 1.0, 40, 200)}
    inputs = {"hybrid": ("ann", "fulltext"), "ann_rerank": ("ann",), "mix": ("ann", "chunks"),
              "twice": ("hybrid", "ann")}
    costs = strategy_costs(own, inputs, ["ann", "hybrid", "ann_rerank", "mix", "twice", "http"])
    assert costs["ann"] == {"index_build_s": 2.0, "items_per_s": 25.0, "index_bytes": 1000, "chunks_per_doc": 1.0,
                            "reused": False, "embedded": 100, "cache_hits": 0}
    assert costs["hybrid"]["index_build_s"] == 3.0 and costs["hybrid"]["index_bytes"] == 1500
    assert costs["ann_rerank"] == costs["ann"]
    assert costs["mix"]["items_per_s"] == 140 / 5.0 and costs["mix"]["chunks_per_doc"] is None
    assert costs["twice"] == costs["hybrid"]  # ann counted once
    assert costs["http"]["index_build_s"] is None and costs["http"]["chunks_per_doc"] is None


def test_an_approximate_variant_index_is_measured_against_exact_search(abstracts, tmp_path, static_model_dir):
    from searchgrade.indexes.build import measure_variant_recall
    from searchgrade.viewmodels.ann_index import variant_index_lines

    chunks = {"method": "tokens", "size": 32, "overlap": 0}
    built = build(abstracts, tmp_path, {
        "ivf-chunks": {"kind": "ann", "embedding_model": str(static_model_dir), "chunking": chunks, "ann_index": "ivf"},
        "flat-chunks": {"kind": "ann", "embedding_model": str(static_model_dir), "chunking": chunks},
    })
    measured = measure_variant_recall(built, QUERY_TEXTS, sample=4)
    assert list(measured) == ["ivf-chunks"]  # the exact one loses nothing: not measured
    found = measured["ivf-chunks"]
    assert found["index"] == "ivf" and found["queries"] == 4 and 0 < found["recall"] <= 1
    assert found["items"] == len(built.nodes["ivf-chunks"].chunks)
    (line,) = variant_index_lines({"variant_ann_recall": measured})
    assert line.startswith(f"ANN index of ivf-chunks: inverted-file (IVF) over {found['items']:,} items, approximate")
