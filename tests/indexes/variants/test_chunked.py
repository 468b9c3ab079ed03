"""A chunked variant's document ranking is the aggregate of its chunk ranking, computed here by hand
from every chunk's score (brute force), for each aggregate, over ANN and BM25.

``max`` and ``first`` are exact at any depth (a prefix of the chunk ranking holds each listed
document's best, or first, chunk). ``sum_top2`` sums the chunks retrieved, and chunks are
retrieved until ``depth`` documents are found, so it equals the sum over every chunk when the
search goes through them all: it is checked at the depth of the whole collection.
"""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from searchgrade.indexes.build import build_searchers
from searchgrade.indexes.builtin.tokenizer import tokenize
from searchgrade.indexes.declared.spec import parse_spec
from searchgrade.indexes.embeddings.encoder import encode, load_embedder
from searchgrade.indexes.registry import registry_for
from searchgrade.indexes.settings import IndexSettings
from tests.indexes.variants.conftest import QUERY_TEXTS

DEPTH = 10


def by_hand(chunk_scores: np.ndarray, doc_of: np.ndarray, position: np.ndarray, how: str,
            depth: int = DEPTH) -> list[tuple[int, float]]:
    """Documents by the aggregate of every chunk's score: the definition, without a search."""
    per_doc: dict[int, list[float]] = {}
    for row in np.argsort(-chunk_scores, kind="stable"):
        if (how == "first" and position[row] != 0) or chunk_scores[row] == -np.inf:  # -inf: not returned
            continue
        per_doc.setdefault(int(doc_of[row]), []).append(float(chunk_scores[row]))
    value = {"max": lambda s: s[0], "sum_top2": lambda s: sum(s[:2]), "first": lambda s: s[0]}[how]
    ranked = sorted(((doc, value(s)) for doc, s in per_doc.items()), key=lambda d: -d[1])
    return ranked[:depth]


def build(abstracts, tmp_path, table):
    spec = parse_spec("v", table)
    return build_searchers(abstracts, IndexSettings(), tmp_path, strategies=["v"], registry=registry_for({"v": spec}))


@pytest.mark.parametrize(("how", "depth"), [("max", DEPTH), ("first", DEPTH), ("sum_top2", 200)])
def test_a_chunked_ann_variants_ranking_is_the_aggregate_of_its_chunk_ranking(abstracts, tmp_path, static_model_dir, how,
                                                                             depth):
    built = build(abstracts, tmp_path, {"kind": "ann", "embedding_model": str(static_model_dir),
                                        "chunking": {"method": "tokens", "size": 48, "overlap": 8}, "aggregate": how})
    node = built.nodes["v"]
    chunks = node.chunks
    assert chunks.chunks_per_doc > 2  # the abstracts really are cut
    model = load_embedder(str(static_model_dir))
    chunk_vectors = encode(model, chunks.texts(abstracts.documents), 256)
    hits = built.searchers["v"].search(QUERY_TEXTS, depth)
    for text, got in zip(QUERY_TEXTS, hits, strict=True):
        expected = by_hand(chunk_vectors @ encode(model, [text], 1)[0], chunks.doc_of, chunks.position, how, depth)
        assert [d.doc_id for d in got.docs] == [abstracts.documents[d].doc_id for d, _ in expected]
        assert [d.score for d in got.docs] == pytest.approx([s for _, s in expected], abs=1e-5)
        # Each document carries the chunk it matched by: one of its own, the best one (max), the first.
        for doc in got.docs:
            passage = got.passages[doc.doc_id]
            row = next(r for r in range(len(chunks)) if chunks.doc_ids[chunks.doc_of[r]] == doc.doc_id
                       and chunks.position[r] == passage.index)
            assert (chunks.starts[row], chunks.ends[row]) == (passage.start, passage.end)
            if how == "first":
                assert passage.index == 0


@pytest.mark.parametrize(("how", "depth"), [("max", DEPTH), ("sum_top2", 200)])
def test_a_chunked_fulltext_variants_ranking_is_the_aggregate_of_rank_bm25_over_the_chunks(abstracts, tmp_path, how,
                                                                                        depth):
    built = build(abstracts, tmp_path, {"kind": "fulltext", "bm25_k1": 1.2, "aggregate": how,
                                        "chunking": {"method": "sentences", "size": 2, "overlap": 1}})
    chunks = built.nodes["v"].chunks
    reference = BM25Okapi([tokenize(t) for t in chunks.texts(abstracts.documents)], k1=1.2, b=0.75)
    for text, got in zip(QUERY_TEXTS, built.searchers["v"].search(QUERY_TEXTS, depth), strict=True):
        scores = reference.get_scores(tokenize(text))
        # BM25 returns only chunks sharing a term with the query (score > 0), as the built-in does.
        expected = by_hand(np.where(scores > 0, scores, -np.inf), chunks.doc_of, chunks.position, how, depth)
        assert [d.doc_id for d in got.docs] == [abstracts.documents[d].doc_id for d, _ in expected]
        assert [d.score for d in got.docs] == pytest.approx([s for _, s in expected], rel=1e-9)


def test_a_deep_list_searches_more_chunks_until_depth_documents_are_found(abstracts, tmp_path, static_model_dir):
    built = build(abstracts, tmp_path, {"kind": "ann", "embedding_model": str(static_model_dir),
                                        "chunking": {"method": "tokens", "size": 16, "overlap": 0}})
    hits = built.searchers["v"].search(QUERY_TEXTS[:1], len(abstracts.documents))
    # Every document is ranked once: the search went on through all the chunks.
    assert sorted(d.doc_id for d in hits[0].docs) == sorted(d.doc_id for d in abstracts.documents)
