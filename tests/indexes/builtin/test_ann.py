from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.builtin import ann
from searchgrade.indexes.builtin.ann import AnnSearcher, build_ann_index, load_ann, save_ann
from searchgrade.indexes.embeddings.encoder import encode, load_embedder
from searchgrade.indexes.settings import IndexSettings
from tests.indexes.conftest import DOCS, QUERIES

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DOC_IDS = list(DOCS)


def random_unit_vectors(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class VectorModel:
    """Stands in for the SentenceTransformer: a query text names the vector it encodes to."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def encode(self, texts, **kwargs):
        return np.stack([self.vectors[t] for t in texts])


def test_flat_search_equals_brute_force_inner_product():
    docs = random_unit_vectors(50)
    query = random_unit_vectors(1, seed=1)[0]
    searcher = AnnSearcher(VectorModel({"q": query}), build_ann_index(docs, IndexSettings()),
                           [f"doc{i}" for i in range(50)])
    hits = searcher.search_one("q", 5)
    expected = np.argsort(-(docs @ query))[:5]
    assert [h.doc_id for h in hits] == [f"doc{i}" for i in expected]
    assert [h.score for h in hits] == pytest.approx((docs @ query)[expected].tolist(), abs=1e-5)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_indexes_find_the_exact_top_hit_on_a_small_corpus(kind):
    docs = random_unit_vectors(300)
    settings = IndexSettings(ann_index=kind, ivf_nprobe=4)
    index = build_ann_index(docs, settings)
    model = VectorModel({f"q{i}": docs[i] + 0.05 * random_unit_vectors(1, seed=100 + i)[0]
                         for i in range(20)})
    searcher = AnnSearcher(model, index, [f"doc{i}" for i in range(300)])
    top1 = [h.docs[0].doc_id for h in searcher.search([f"q{i}" for i in range(20)], 3)]
    assert top1 == [f"doc{i}" for i in range(20)]


def test_ivf_uses_sqrt_n_lists_and_caps_nprobe():
    import faiss

    index = build_ann_index(random_unit_vectors(100), IndexSettings(ann_index="ivf", ivf_nprobe=50))
    ivf = faiss.extract_index_ivf(index)
    assert (ivf.nlist, ivf.nprobe) == (10, 10)
    assert index.metric_type == faiss.METRIC_INNER_PRODUCT


def test_hnsw_uses_inner_product_and_the_search_beam_setting():
    import faiss

    index = build_ann_index(random_unit_vectors(20), IndexSettings(ann_index="hnsw", hnsw_ef_search=77))
    assert index.metric_type == faiss.METRIC_INNER_PRODUCT
    assert index.hnsw.efSearch == 77


def test_unknown_index_type_lists_the_valid_ones():
    # Settings refuse it already; the registry refuses it too if validation is bypassed.
    settings = IndexSettings()
    object.__setattr__(settings, "ann_index", "annoy")
    with pytest.raises(SearchGradeError, match="'annoy' is not known: use one of auto, flat, hnsw, ivf"):
        build_ann_index(random_unit_vectors(5), settings)
    with pytest.raises(SearchGradeError, match="flat, hnsw, ivf"):
        dataclasses.replace(IndexSettings(), ann_index="annoy")


def test_k_larger_than_the_corpus_returns_every_document_once():
    docs = random_unit_vectors(4)
    searcher = AnnSearcher(VectorModel({"q": docs[0]}), build_ann_index(docs, IndexSettings()), list("abcd"))
    hits = searcher.search_one("q", 10)
    assert sorted(h.doc_id for h in hits) == list("abcd")
    assert hits[0].doc_id == "a"


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_saved_index_reloads_with_the_same_results(tmp_path, kind):
    settings = IndexSettings(ann_index=kind)
    docs = random_unit_vectors(60)
    ids = [f"d{i}" for i in range(60)]
    index = build_ann_index(docs, settings)
    save_ann(tmp_path, index, ids, settings)
    loaded = load_ann(tmp_path, settings, ids)
    assert loaded is not None and loaded.ntotal == 60
    query = random_unit_vectors(1, seed=9)
    np.testing.assert_array_equal(index.search(query, 5)[1], loaded.search(query, 5)[1])


def test_saved_index_is_not_reused_for_other_documents_or_settings(tmp_path):
    settings = IndexSettings()
    save_ann(tmp_path, build_ann_index(random_unit_vectors(3), settings), ["a", "b", "c"], settings)
    assert load_ann(tmp_path, settings, ["a", "b", "x"]) is None
    assert load_ann(tmp_path, IndexSettings(ann_index="hnsw"), ["a", "b", "c"]) is None
    (tmp_path / ann.MANIFEST).unlink()
    assert load_ann(tmp_path, settings, ["a", "b", "c"]) is None


def test_truncated_index_file_is_rebuilt_not_loaded(tmp_path):
    settings = IndexSettings()
    save_ann(tmp_path, build_ann_index(random_unit_vectors(3), settings), ["a", "b", "c"], settings)
    (tmp_path / "index.faiss").write_bytes(b"garbage")
    assert load_ann(tmp_path, settings, ["a", "b", "c"]) is None


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_real_model_finds_the_document_each_query_was_written_for(kind):
    model = load_embedder(MODEL)
    texts = [f"{title} {text}" for title, text in DOCS.values()]
    index = build_ann_index(encode(model, texts, 32), IndexSettings(ann_index=kind, ivf_nprobe=2))
    hits = AnnSearcher(model, index, DOC_IDS).search([q for q, _ in QUERIES.values()], k=3)
    assert [h.docs[0].doc_id for h in hits] == [doc for _, doc in QUERIES.values()]
    assert all(0 < h.latency_s < 5 for h in hits)


def clustered_unit_vectors(n: int, clusters: int = 20, dim: int = 16, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    vectors = centres[rng.integers(0, clusters, n)] + 0.3 * rng.standard_normal((n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_auto_builds_an_ivf_index_above_the_threshold(monkeypatch):
    monkeypatch.setattr("searchgrade.indexes.settings.ANN_EXACT_MAX_DOCS", 50)
    docs = clustered_unit_vectors(200)
    assert ann.AnnSearcher(VectorModel({}), build_ann_index(docs, IndexSettings()), [str(i) for i in range(200)]).kind == "ivf"
    small = build_ann_index(docs[:50], IndexSettings())
    assert ann.AnnSearcher(VectorModel({}), small, [str(i) for i in range(50)]).kind == "flat"


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_recall_at_10_compares_the_index_with_exact_search(kind):
    docs = clustered_unit_vectors(2000)
    queries = {f"q{i}": v for i, v in enumerate(clustered_unit_vectors(60, seed=2))}
    # One IVF list visited, a tiny HNSW beam: approximate enough to miss some neighbours.
    settings = IndexSettings(ann_index=kind, ivf_nprobe=1, hnsw_ef_search=1, hnsw_m=4)
    index = build_ann_index(docs, settings)
    searcher = AnnSearcher(VectorModel(queries), index, [str(i) for i in range(len(docs))])
    measured = searcher.recall_at_k(list(queries), k=10, sample=40, seed=3)
    assert (measured["index"], measured["k"], measured["queries"]) == (kind, 10, 40)
    vectors = np.stack(list(queries.values()))
    exact = np.argsort(-(vectors @ docs.T), axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(np.sort(searcher.exact_search(vectors, 10), axis=1), np.sort(exact, axis=1))
    import random

    chosen = random.Random(3).sample(list(queries), 40)
    found = index.search(np.stack([queries[q] for q in chosen]), 10)[1]
    truth = [set(exact[int(q[1:])].tolist()) for q in chosen]
    expected = sum(len(set(f.tolist()) & t) for f, t in zip(found, truth, strict=True)) / 400
    assert measured["recall"] == pytest.approx(expected) and measured["recall"] < 1
    if kind == "ivf":
        assert ann._faiss().extract_index_ivf(index).nprobe == 1  # restored after the exact search


def test_an_exact_index_has_no_recall_to_measure():
    docs = random_unit_vectors(10)
    searcher = AnnSearcher(VectorModel({"q": docs[0]}), build_ann_index(docs, IndexSettings()), list("abcdefghij"))
    assert searcher.kind == "flat" and searcher.recall_at_k(["q"]) is None
