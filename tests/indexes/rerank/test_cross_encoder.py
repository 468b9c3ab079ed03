from __future__ import annotations

import time

import numpy as np
import pytest

from searchgrade.core.records import ScoredDoc, SearchGradeError
from searchgrade.indexes.rerank.cross_encoder import RerankSearcher, load_reranker
from tests.indexes.conftest import DOCS

CONTENTS = {doc_id: f"{title} {text}" for doc_id, (title, text) in DOCS.items()}


class FixedSource:
    name = "fulltext"

    def __init__(self, doc_ids: list[str]) -> None:
        self.doc_ids = doc_ids
        self.asked: list[int] = []

    def search_one(self, query: str, k: int) -> list[ScoredDoc]:
        self.asked.append(k)
        return [ScoredDoc(d, 1.0 / r, r) for r, d in enumerate(self.doc_ids[:k], start=1)]


class ScriptedModel:
    """A cross-encoder stand-in whose score for a pair is looked up by document content."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def predict(self, pairs, **kwargs):
        return np.array([self.scores[content] for _, content in pairs], dtype=np.float32)


def test_reranked_order_follows_the_cross_encoder_among_the_top_depth():
    base = FixedSource(["d01", "d02", "d03", "d04", "d05"])
    model = ScriptedModel({CONTENTS["d01"]: 0.1, CONTENTS["d02"]: 0.9, CONTENTS["d03"]: 0.5})
    searcher = RerankSearcher(base, model, CONTENTS, depth=3)
    hits = searcher.search_one("q", 2)
    assert base.asked == [3]
    assert [(h.doc_id, h.rank) for h in hits] == [("d02", 1), ("d03", 2)]
    assert [h.score for h in hits] == pytest.approx([0.9, 0.5])
    assert searcher.name == "fulltext_rerank"


def test_equal_cross_encoder_scores_keep_the_base_order():
    base = FixedSource(["d03", "d01", "d02"])
    model = ScriptedModel({CONTENTS[d]: 0.5 for d in ("d01", "d02", "d03")})
    assert [h.doc_id for h in RerankSearcher(base, model, CONTENTS, depth=3).search_one("q", 3)] == ["d03", "d01", "d02"]


def test_k_beyond_depth_takes_k_candidates():
    base = FixedSource(list(DOCS))
    model = ScriptedModel({c: float(i) for i, c in enumerate(CONTENTS.values())})
    hits = RerankSearcher(base, model, CONTENTS, depth=2).search_one("q", 4)
    assert base.asked == [4] and len(hits) == 4


def test_empty_base_results_give_empty_results():
    hits = RerankSearcher(FixedSource([]), ScriptedModel({}), CONTENTS, depth=5).search(["q"], 3)
    assert hits[0].docs == []


def test_tiny_local_cross_encoder_reranks_by_its_own_predict_scores(tiny_cross_encoder_dir):
    model = load_reranker(str(tiny_cross_encoder_dir))
    base = FixedSource(list(DOCS))
    searcher = RerankSearcher(base, model, CONTENTS, depth=8)
    query = "penguins eat krill in antarctica"
    [hits] = searcher.search([query], k=5)

    candidates = list(DOCS)[:8]
    own = model.predict([(query, CONTENTS[d]) for d in candidates])
    expected = [candidates[i] for i in np.argsort(-own, kind="stable")[:5]]
    assert [h.doc_id for h in hits.docs] == expected
    assert [h.score for h in hits.docs] == pytest.approx(sorted(own.tolist(), reverse=True)[:5])
    assert set(h.doc_id for h in hits.docs) <= set(candidates)
    assert hits.latency_s > 0


def test_full_depth_rerank_is_a_permutation_of_the_base_candidates(tiny_cross_encoder_dir):
    model = load_reranker(str(tiny_cross_encoder_dir))
    base = FixedSource(list(DOCS)[:6])
    [hits] = RerankSearcher(base, model, CONTENTS, depth=6).search(["volcano"], k=6)
    assert sorted(h.doc_id for h in hits.docs) == sorted(list(DOCS)[:6])
    assert [h.rank for h in hits.docs] == [1, 2, 3, 4, 5, 6]


def test_unloadable_reranker_fails_fast_with_the_fix():
    start = time.perf_counter()
    with pytest.raises(SearchGradeError) as info:
        load_reranker("searchgrade-tests/no-such-reranker")
    assert time.perf_counter() - start < 15
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("reranker model 'searchgrade-tests/no-such-reranker' could not be loaded")
    assert "--reranker-model /path/to/model" in message


def test_multi_label_cross_encoder_is_refused(tmp_path):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nword\n", encoding="utf-8")
    config = BertConfig(vocab_size=6, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                        intermediate_size=8, max_position_embeddings=32, num_labels=3)
    BertForSequenceClassification(config).save_pretrained(tmp_path)
    BertTokenizer(str(tmp_path / "vocab.txt")).save_pretrained(tmp_path)
    with pytest.raises(SearchGradeError, match="outputs 3 labels"):
        load_reranker(str(tmp_path))


class RecordingScorer:
    """A pair scorer stand-in (a trained reranker's shape): scores by content, finalizes by
    negating, and keeps the pairs it got."""

    name = "recording"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.pairs: list = []
        self.finalized: list = []

    def score_pairs(self, pairs):
        self.pairs += pairs
        return np.array([self.scores[p.content] for p in pairs])

    def finalize(self, query_id, scores):
        self.finalized.append((query_id, list(scores)))
        return -scores


def test_a_rerank_node_gives_its_pair_scorer_query_ids_and_finalizes_in_the_base_order():
    """What a cross-fitted trained reranker relies on: each pair carries its query's id (so the
    scorer picks the fold model per query), and finalize gets one query's raw scores in the
    base order (so it can blend with the base ranks)."""
    from searchgrade.indexes.base import Answer, QueryBatch
    from searchgrade.indexes.rerank.cross_encoder import RerankNode, SharedScores

    scorer = RecordingScorer({CONTENTS["d01"]: 0.1, CONTENTS["d02"]: 0.9, CONTENTS["d03"]: 0.5})
    node = RerankNode("fulltext_rerank", "fulltext", SharedScores(scorer), depth=3, contents=CONTENTS)
    base = [Answer([ScoredDoc(d, 1.0 / r, r) for r, d in enumerate(["d01", "d02", "d03"], start=1)], 0.0)]
    out = node.answer(QueryBatch(["q7"], ["the text"]), 3, {"fulltext": base})
    assert [(p.query_id, p.query, p.doc_id) for p in scorer.pairs] == [
        ("q7", "the text", "d01"), ("q7", "the text", "d02"), ("q7", "the text", "d03")]
    assert scorer.finalized == [("q7", [0.1, 0.9, 0.5])]
    assert [d.doc_id for d in out[0].docs] == ["d01", "d03", "d02"]  # finalize negated the scores
