from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.base import top_k
from searchgrade.indexes.builtin import bm25 as bm25_module
from searchgrade.indexes.builtin.bm25 import MANIFEST, Bm25Index, build_bm25_index
from searchgrade.indexes.builtin.fulltext import FulltextSearcher, build_index, load_index, tokenize
from tests.conftest import CRANFIELD, DEMO
from tests.indexes.conftest import DOCS

TEXTS = [f"{title} {text}" for title, text in DOCS.values()]


def test_tokenizer_lowercases_and_splits_unicode_words():
    assert tokenize("Café-au-lait, 2x!  Über_alles ÉTÉ") == ["café", "au", "lait", "2x", "über_alles", "été"]
    assert tokenize("  ?!  ") == []


def index_of(tmp_path: Path, texts: list[str] = TEXTS, ids: list[str] | None = None) -> Bm25Index:
    return build_index(tmp_path / "bm25", ids or [f"d{i:02d}" for i in range(1, len(texts) + 1)], texts)


def searcher(tmp_path: Path, k1: float = 1.5, b: float = 0.75) -> FulltextSearcher:
    return FulltextSearcher(index_of(tmp_path, ids=list(DOCS)), k1, b)


def reference_top(scores: np.ndarray, k: int) -> list[int]:
    """rank_bm25's scores ranked as searchgrade ranks: by score, equal scores in corpus order,
    documents scoring 0 (no query term) left out."""
    matched = np.flatnonzero(scores)
    return matched[top_k(scores[matched], k)].tolist()


def test_scores_equal_rank_bm25_bit_for_bit(tmp_path):
    reference = BM25Okapi([re.findall(r"\w+", t.lower()) for t in TEXTS], k1=1.2, b=0.5)
    ours = searcher(tmp_path, k1=1.2, b=0.5)
    for query in ("Sugar and blood-hormone", "the the sugar", "a", "zzz", "ice ice ice valleys"):
        np.testing.assert_array_equal(ours.scores(query), reference.get_scores(tokenize(query)))


def test_terms_in_most_documents_get_rank_bm25s_idf_floor(tmp_path):
    # "common" is in 4 of 5 documents: its raw idf ln(1.5 / 4.5) is negative, so it is floored at
    # 0.25 x the mean idf, exactly as rank_bm25 does; "rare" keeps ln(4.5 / 1.5).
    texts = ["common rare", "common a", "common b", "common c d", "e f"]
    index = index_of(tmp_path, texts)
    reference = BM25Okapi([t.split() for t in texts])
    assert index.idf[index.vocab["common"]] == reference.idf["common"] == 0.25 * reference.average_idf
    assert index.idf[index.vocab["rare"]] == reference.idf["rare"] == pytest.approx(np.log(3))
    np.testing.assert_array_equal(index.scores(["common", "rare", "common"], 1.5, 0.75),
                                  reference.get_scores(["common", "rare", "common"]))


def test_a_negative_floor_still_ranks_matching_documents_above_the_rest(tmp_path):
    # Three documents, two sharing every term: the mean idf is negative, so is the floor.
    texts = ["x y", "x y", "z"]
    reference = BM25Okapi([t.split() for t in texts])
    ours = FulltextSearcher(index_of(tmp_path, texts, ["a", "b", "c"]))
    assert (reference.get_scores(["x"])[:2] < 0).all()
    np.testing.assert_array_equal(ours.scores("x"), reference.get_scores(["x"]))
    assert [h.doc_id for h in ours.search_one("x", 3)] == ["a", "b"]


def test_equal_scores_keep_corpus_order(tmp_path):
    texts = ["apple pie", "banana", "apple pie", "apple pie", "cherry tart"]
    ours = FulltextSearcher(index_of(tmp_path, texts, ["e", "d", "c", "b", "a"]))
    assert [h.doc_id for h in ours.search_one("apple", 2)] == ["e", "c"]
    assert [h.doc_id for h in ours.search_one("apple", 10)] == ["e", "c", "b"]


def test_results_are_the_top_k_scores_in_order(tmp_path):
    ours = searcher(tmp_path)
    scores = ours.scores("sunlight water sugar")
    hits = ours.search_one("sunlight water sugar", 3)
    expected = np.argsort(-scores, kind="stable")[:3]
    assert [h.doc_id for h in hits] == [list(DOCS)[i] for i in expected]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert [h.score for h in hits] == scores[expected].tolist()
    assert hits[0].doc_id == "d05"  # photosynthesis has all three terms


def test_documents_without_any_query_term_are_not_returned(tmp_path):
    ours = searcher(tmp_path)
    assert [h.doc_id for h in ours.search_one("krill", 10)] == ["d01"]
    assert ours.search_one("zzzz unknownword", 10) == []
    assert ours.search_one("?!", 10) == []


def test_search_gives_one_timed_result_per_query(tmp_path):
    hits = searcher(tmp_path).search(["volcano magma", "chess pieces", "nothing-matches-qqq"], k=5)
    assert [h.docs[0].doc_id if h.docs else None for h in hits] == ["d02", "d04", None]
    assert all(h.latency_s > 0 for h in hits)


def test_k1_and_b_change_the_scores_and_add_one_weights_file_each(tmp_path):
    index = index_of(tmp_path, ids=list(DOCS))
    a = FulltextSearcher(index, k1=1.5).scores("honey bees flowers")
    b = FulltextSearcher(index, k1=0.5).scores("honey bees flowers")
    assert not np.allclose(a, b)
    weights = sorted(p.name for p in index.directory.glob("weights-*.npy"))
    assert weights == ["weights-k1_0.5-b_0.75.npy", "weights-k1_1.5-b_0.75.npy"]
    again = Bm25Index.load(index.directory)
    np.testing.assert_array_equal(FulltextSearcher(again, k1=0.5).scores("honey bees flowers"), b)


def test_the_index_is_binary_and_memory_mapped(tmp_path):
    index = searcher(tmp_path).index
    names = {p.name for p in index.directory.iterdir()}
    assert {"indptr.npy", "doc_rows.npy", "tf.npy", "doc_len.npy", "idf.npy", "vocab.txt",
            "doc_ids.json", MANIFEST} <= names
    assert not any(name.startswith("tokens") for name in names)
    loaded = Bm25Index.load(index.directory)
    assert all(isinstance(a, np.memmap) for a in (loaded.doc_rows, loaded.tf, loaded.indptr, loaded.idf))
    assert isinstance(loaded.weights(1.5, 0.75), np.memmap)
    assert loaded.doc_rows.dtype == np.int32 and loaded.tf.dtype == np.uint16


def test_the_build_streams_in_chunks_to_the_same_index(tmp_path, monkeypatch):
    whole = index_of(tmp_path / "whole")
    monkeypatch.setattr(bm25_module, "CHUNK_DOCS", 3)
    calls = []
    documents = ((f"d{i:02d}", text) for i, text in enumerate(TEXTS, start=1))  # a generator
    chunked = build_bm25_index(documents, tmp_path / "chunked", lambda *a: calls.append(a))
    for name in ("indptr", "doc_rows", "tf", "doc_len", "idf"):
        np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name))
    assert chunked.vocab == whole.vocab
    assert [done for _, done, _ in calls] == [3, 6, 9, 12, 15, 18, 20]


def test_term_counts_above_65535_are_stored_exactly(tmp_path):
    index = index_of(tmp_path, ["ha " * 70_000, "ha ho"])
    assert index.tf.dtype == np.uint32 and sorted(index.tf.tolist()) == [1, 1, 70_000]


def test_an_index_without_manifest_other_documents_or_format_is_not_reused(tmp_path):
    index = index_of(tmp_path, ["a b", "c"], ["x", "y"])
    directory = index.directory
    assert load_index(directory, ["x", "y"]) is not None
    assert load_index(directory, ["x", "z"]) is None
    assert load_index(tmp_path / "missing", ["x", "y"]) is None
    manifest = json.loads((directory / MANIFEST).read_text())
    (directory / MANIFEST).write_text(json.dumps({**manifest, "format": "tokens-json"}))
    assert load_index(directory, ["x", "y"]) is None
    (directory / MANIFEST).unlink()
    assert load_index(directory, ["x", "y"]) is None


def test_a_truncated_array_is_not_reused(tmp_path):
    index = index_of(tmp_path, ["a b", "c"], ["x", "y"])
    np.save(index.directory / "doc_rows.npy", np.zeros(1, dtype=np.int32))
    assert load_index(index.directory, ["x", "y"]) is None


def test_empty_documents_are_indexed_and_an_all_empty_corpus_is_refused(tmp_path):
    ours = FulltextSearcher(index_of(tmp_path, ["", "penguins", "?!"], ["a", "b", "c"]))
    assert [h.doc_id for h in ours.search_one("penguins", 5)] == ["b"]
    with pytest.raises(SearchGradeError, match="every document is empty"):
        index_of(tmp_path / "empty", ["", "?!"])


def test_pruned_search_gives_the_exhaustive_ranking_ties_included(tmp_path, monkeypatch):
    # A corpus from a small vocabulary: many equal scores, common terms in most documents.
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(60)]
    weights = 1 / np.arange(1, 61) ** 1.1
    texts = [" ".join(rng.choice(words, size=rng.integers(1, 12), p=weights / weights.sum()))
             for _ in range(3000)]
    index = index_of(tmp_path, texts)
    monkeypatch.setattr(bm25_module, "_MIN_PRUNED", 1)
    monkeypatch.setattr(bm25_module, "_LOOKUP_COST", 0)
    pruned = []
    candidates = index._candidates
    monkeypatch.setattr(index, "_candidates", lambda *a: pruned.append(candidates(*a)) or pruned[-1])
    for _ in range(150):
        query = list(rng.choice(words, size=rng.integers(1, 6)))
        full = index.scores(query, 1.5, 0.75)
        for k in (1, 10, 100):
            rows, scores = index.top(query, k, 1.5, 0.75)
            assert rows.tolist() == reference_top(full, k)
            np.testing.assert_array_equal(scores, full[rows])
    assert sum(c is not None for c in pruned) > 50  # the pruned path did run


def _beir(directory: Path) -> tuple[list[str], list[str], list[str]]:
    docs = [json.loads(line) for line in (directory / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = [json.loads(line)["text"]
               for line in (directory / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    texts = [f"{d['title']} {d['text']}".strip() if d.get("title") else d.get("text", "") for d in docs]
    return [d["_id"] for d in docs], texts, queries


@pytest.mark.slow
@pytest.mark.parametrize("folder", [CRANFIELD, DEMO], ids=["cranfield", "scifact"])
def test_top_10_is_rank_bm25s_on_real_collections(tmp_path, folder):
    doc_ids, texts, queries = _beir(folder)
    reference = BM25Okapi([tokenize(text) for text in texts])
    ours = FulltextSearcher(build_index(tmp_path / "bm25", doc_ids, texts))
    for query in queries:
        expected = reference.get_scores(tokenize(query))
        np.testing.assert_array_equal(ours.scores(query), expected)
        assert [h.doc_id for h in ours.search_one(query, 10)] == [doc_ids[i] for i in reference_top(expected, 10)]
