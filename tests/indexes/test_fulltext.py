from __future__ import annotations

import re

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from indexes import fulltext
from indexes.fulltext import FulltextSearcher, fit_bm25, load_tokens, save_tokens, tokenize
from indexes.settings import IndexSettings

from .conftest import DOCS


def test_tokenizer_lowercases_and_splits_unicode_words():
    assert tokenize("Café-au-lait, 2x!  Über_alles ÉTÉ") == ["café", "au", "lait", "2x", "über_alles", "été"]
    assert tokenize("  ?!  ") == []


def searcher(settings: IndexSettings = IndexSettings()) -> FulltextSearcher:
    texts = [f"{title} {text}" for title, text in DOCS.values()]
    return FulltextSearcher(fit_bm25([tokenize(t) for t in texts], settings), list(DOCS))


def test_scores_equal_rank_bm25_on_the_same_tokens():
    texts = [f"{title} {text}" for title, text in DOCS.values()]
    reference = BM25Okapi([re.findall(r"\w+", t.lower()) for t in texts], k1=1.2, b=0.5)
    ours = searcher(IndexSettings(bm25_k1=1.2, bm25_b=0.5))
    query = "Sugar and blood-hormone"
    np.testing.assert_allclose(ours.scores(query),
                               reference.get_scores(["sugar", "and", "blood", "hormone"]))


def test_results_are_the_top_k_scores_in_order():
    ours = searcher()
    scores = ours.scores("sunlight water sugar")
    hits = ours.search_one("sunlight water sugar", 3)
    expected = np.argsort(-scores, kind="stable")[:3]
    assert [h.doc_id for h in hits] == [list(DOCS)[i] for i in expected]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert [h.score for h in hits] == pytest.approx(scores[expected].tolist())
    assert hits[0].doc_id == "d05"  # photosynthesis has all three terms


def test_documents_without_any_query_term_are_not_returned():
    ours = searcher()
    assert [h.doc_id for h in ours.search_one("krill", 10)] == ["d01"]
    assert ours.search_one("zzzz unknownword", 10) == []
    assert ours.search_one("?!", 10) == []


def test_search_gives_one_timed_result_per_query():
    hits = searcher().search(["volcano magma", "chess pieces", "nothing-matches-qqq"], k=5)
    assert [h.docs[0].doc_id if h.docs else None for h in hits] == ["d02", "d04", None]
    assert all(h.latency_s > 0 for h in hits)


def test_k1_changes_the_scores():
    a = searcher(IndexSettings(bm25_k1=1.5)).scores("honey bees flowers")
    b = searcher(IndexSettings(bm25_k1=0.5)).scores("honey bees flowers")
    assert not np.allclose(a, b)


def test_saved_tokens_round_trip_and_reject_another_corpus(tmp_path):
    tokens = [["a", "b"], ["c"]]
    save_tokens(tmp_path, ["x", "y"], tokens)
    assert load_tokens(tmp_path, ["x", "y"]) == tokens
    assert load_tokens(tmp_path, ["x", "z"]) is None
    assert load_tokens(tmp_path / "missing", ["x", "y"]) is None


def test_tokens_without_a_manifest_count_as_an_interrupted_build(tmp_path):
    save_tokens(tmp_path, ["x"], [["a"]])
    (tmp_path / fulltext.MANIFEST).unlink()
    assert load_tokens(tmp_path, ["x"]) is None
