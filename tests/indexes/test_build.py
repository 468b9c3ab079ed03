from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from searchgrade.core.records import Collection, Document, SearchGradeError
from searchgrade.core.records import collection_fingerprint as corpus_fingerprint
from searchgrade.indexes.base import Searcher
from searchgrade.indexes.build import build_searchers
from searchgrade.indexes.embeddings.encoder import load_embedder
from searchgrade.indexes.registry import known_strategies
from searchgrade.indexes.settings import IndexSettings
from searchgrade.indexes.variants import components

from .conftest import DOCS, QUERIES, CountingModel, make_collection

STRATEGIES = known_strategies()

NO_RERANKER = "searchgrade-tests/no-such-reranker"
BASES = ("ann", "fulltext", "hybrid")
QUERY_TEXTS = [text for text, _ in QUERIES.values()]
EXPECTED_TOP1 = [doc for _, doc in QUERIES.values()]


@pytest.fixture
def counting(monkeypatch) -> CountingModel:
    """The real embedder, counting every text it encodes (documents and queries)."""
    model = CountingModel(load_embedder("sentence-transformers/all-MiniLM-L6-v2"))
    monkeypatch.setattr(components, "load_embedder", lambda name, *args, **kwargs: model)
    return model


def settings(**changes) -> IndexSettings:
    return IndexSettings(reranker_model=NO_RERANKER, **changes)


def test_all_six_strategies_are_built_with_a_local_reranker(tmp_path, collection, tiny_cross_encoder_dir):
    built = build_searchers(collection, IndexSettings(reranker_model=str(tiny_cross_encoder_dir)), tmp_path)
    assert list(built.searchers) == list(STRATEGIES) and built.skipped == {}
    for name, searcher in built.searchers.items():
        assert isinstance(searcher, Searcher) and searcher.name == name
        hits = searcher.search(QUERY_TEXTS, k=3)
        assert len(hits) == len(QUERY_TEXTS)
        assert all(h.latency_s > 0 for h in hits)
        # Full-text returns only documents sharing a term with the query.
        assert all(1 <= len(h.docs) <= 3 if "fulltext" in name else len(h.docs) == 3 for h in hits)
    assert {"embedder_load", "embed", "ann_build", "bm25_build", "reranker_load"} <= set(built.timings)


def test_base_strategies_find_the_source_document_of_each_query(tmp_path, collection):
    built = build_searchers(collection, settings(), tmp_path, strategies=BASES)
    for name in BASES:
        top1 = [h.docs[0].doc_id for h in built.searchers[name].search(QUERY_TEXTS, k=10)]
        assert top1 == EXPECTED_TOP1, name


def test_unloadable_reranker_skips_the_three_rerank_strategies_with_the_fix(tmp_path, collection):
    start = time.perf_counter()
    built = build_searchers(collection, settings(), tmp_path)
    assert time.perf_counter() - start < 30
    assert list(built.searchers) == list(BASES)
    assert list(built.skipped) == ["ann_rerank", "fulltext_rerank", "hybrid_rerank"]
    for reason in built.skipped.values():
        assert "\n" not in reason
        assert f"reranker model '{NO_RERANKER}' could not be loaded" in reason
        assert "--reranker-model /path/to/model" in reason


def test_only_rerank_strategies_with_no_reranker_build_nothing(tmp_path, collection, monkeypatch):
    monkeypatch.setattr(components, "load_embedder", pytest.fail)
    built = build_searchers(collection, settings(), tmp_path, strategies=["ann_rerank"])
    assert built.searchers == {} and list(built.skipped) == ["ann_rerank"]


def test_only_what_the_strategies_need_is_built(tmp_path, collection, monkeypatch):
    monkeypatch.setattr(components, "load_embedder", pytest.fail)
    built = build_searchers(collection, settings(), tmp_path, strategies=["fulltext"])
    assert list(built.searchers) == ["fulltext"]
    assert set(built.timings) == {"bm25_build"}
    assert not (tmp_path / "embeddings").exists()


def test_unchanged_corpus_and_settings_reuse_every_artifact(tmp_path, collection, counting):
    first = build_searchers(collection, settings(), tmp_path, strategies=BASES)
    assert (first.stats["ann_reused"], first.stats["bm25_reused"]) == (False, False)
    assert first.stats["embedded"] == len(DOCS) and first.stats["embed_docs_per_s"] > 0
    assert len(counting.encoded) == len(DOCS)

    second = build_searchers(collection, settings(), tmp_path, strategies=BASES)
    assert (second.stats["ann_reused"], second.stats["bm25_reused"]) == (True, True)
    assert second.stats["embedded"] == 0
    assert len(counting.encoded) == len(DOCS)  # nothing encoded again
    assert second.artifacts == first.artifacts
    assert "embed" not in second.timings
    top1 = [h.docs[0].doc_id for h in second.searchers["hybrid"].search(QUERY_TEXTS, k=5)]
    assert top1 == EXPECTED_TOP1


def test_a_changed_corpus_rebuilds_but_encodes_only_the_new_document(tmp_path, counting):
    build_searchers(make_collection(), settings(), tmp_path, strategies=BASES)
    grown = make_collection({**DOCS, "d21": ("Lighthouses", "A lighthouse guides ships with a lamp.")})
    counting.encoded.clear()
    built = build_searchers(grown, settings(), tmp_path, strategies=BASES)
    assert (built.stats["ann_reused"], built.stats["bm25_reused"]) == (False, False)
    assert (built.stats["embedded"], built.stats["cache_hits"]) == (1, len(DOCS))
    assert counting.encoded == ["Lighthouses A lighthouse guides ships with a lamp."]
    assert len(list((tmp_path / "indexes").iterdir())) == 4  # 2 corpora x (ann, bm25)
    hits = built.searchers["fulltext"].search(["lighthouse ships"], k=1)
    assert hits[0].docs[0].doc_id == "d21"


def test_an_edited_document_changes_the_fingerprint():
    edited = make_collection({**DOCS, "d01": ("Penguins", "Penguins swim.")})
    assert corpus_fingerprint(edited) != corpus_fingerprint(make_collection())
    assert corpus_fingerprint(make_collection()) == corpus_fingerprint(make_collection())


def test_a_new_index_type_rebuilds_the_ann_index_from_cached_embeddings(tmp_path, collection, counting):
    build_searchers(collection, settings(), tmp_path, strategies=BASES)
    counting.encoded.clear()
    built = build_searchers(collection, settings(ann_index="hnsw"), tmp_path, strategies=BASES)
    assert (built.stats["ann_reused"], built.stats["bm25_reused"]) == (False, True)
    assert (built.stats["embedded"], built.stats["cache_hits"]) == (0, len(DOCS))
    assert counting.encoded == []


def test_new_bm25_parameters_reuse_the_tokens_but_change_the_scores(tmp_path, collection):
    a = build_searchers(collection, settings(), tmp_path, strategies=["fulltext"])
    b = build_searchers(collection, settings(bm25_k1=0.3, bm25_b=0.2), tmp_path, strategies=["fulltext"])
    assert b.stats["bm25_reused"] and b.artifacts == a.artifacts
    query = "sugar blood hormone insulin"
    assert (a.searchers["fulltext"].search_one(query, 1)[0].score
            != pytest.approx(b.searchers["fulltext"].search_one(query, 1)[0].score))


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_hnsw_and_ivf_are_selectable_and_find_the_source_documents(tmp_path, collection, kind):
    built = build_searchers(collection, settings(ann_index=kind, ivf_nprobe=2), tmp_path,
                            strategies=["ann", "hybrid"])
    assert built.stats["ann_index"] == kind
    for name in ("ann", "hybrid"):
        top1 = [h.docs[0].doc_id for h in built.searchers[name].search(QUERY_TEXTS, k=5)]
        assert top1 == EXPECTED_TOP1


def test_given_collection_fingerprint_names_the_artifact_folders(tmp_path, collection):
    built = build_searchers(collection, settings(), tmp_path, strategies=["fulltext"],
                            collection_fingerprint="abc123")
    assert Path(built.artifacts["bm25"]).name.startswith("abc123-")
    assert built.stats["collection_fingerprint"] == "abc123"


def test_progress_reports_embedding_and_bm25_to_completion(tmp_path, collection):
    calls: list[tuple[str, int, int]] = []
    build_searchers(collection, settings(), tmp_path, strategies=BASES, progress=lambda *a: calls.append(a))
    n = len(DOCS)
    assert calls[0] == ("embed", 0, n) and ("embed", n, n) in calls and calls[-1] == ("bm25_build", n, n)
    calls.clear()
    build_searchers(collection, settings(), tmp_path, strategies=BASES, progress=lambda *a: calls.append(a))
    assert calls == [("embed", n, n), ("bm25_build", n, n)]  # reused: bars still complete


def test_unknown_strategy_lists_the_valid_ones(tmp_path, collection):
    with pytest.raises(SearchGradeError, match="unknown strategy 'bm25': use any of ann, fulltext, hybrid"):
        build_searchers(collection, settings(), tmp_path, strategies=["bm25"])


def test_empty_collection_is_refused_by_name(tmp_path):
    with pytest.raises(SearchGradeError, match="'empty' .* has no documents"):
        build_searchers(Collection("empty", "/x", []), settings(), tmp_path)


def test_duplicate_document_ids_are_refused(tmp_path):
    twice = Collection("dup", "/x", [Document("a", "", "one"), Document("a", "", "two")])
    with pytest.raises(SearchGradeError, match="'a' twice"):
        build_searchers(twice, settings(), tmp_path)


def test_unloadable_embedding_model_raises_with_the_fix(tmp_path, collection):
    bad = dataclasses.replace(settings(), embedding_model="searchgrade-tests/no-such-embedder")
    with pytest.raises(SearchGradeError, match="embedding model 'searchgrade-tests/no-such-embedder'"):
        build_searchers(collection, bad, tmp_path, strategies=["ann"])


def test_empty_documents_are_indexed_without_crashing(tmp_path):
    docs = {**DOCS, "empty": ("", "")}
    built = build_searchers(make_collection(docs), settings(), tmp_path, strategies=BASES)
    assert all(len(built.searchers[s].search(["penguins"], 25)[0].docs) >= 1 for s in BASES)
