from __future__ import annotations

import json

import pytest

from searchgrade.core.records import Document, SearchGradeError
from searchgrade.engine.llm.cache import MemoryCache
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.querygen import (
    QueryGenSettings,
    filter_queries,
    generate_queries,
    jaccard,
    sample_documents,
)
from searchgrade.engine.llm.schemas import QueryGenReply
from searchgrade.engine.llm.settings import LLMSettings
from tests.engine.llm.stub import StubOpenAI, user_text

LONG = " ".join(f"word{i}" for i in range(30))


def corpus(n: int) -> list[Document]:
    return [Document(f"d{i:02d}", f"Title {i}", f"Body of document {i}. {LONG}") for i in range(n)]


def test_sample_spreads_over_the_corpus_and_is_seeded():
    docs = corpus(40)
    sample = sample_documents(docs, 4, seed=1)
    positions = [docs.index(d) for d in sample]
    # One from each quarter.
    assert [p // 10 for p in positions] == [0, 1, 2, 3]
    assert sample == sample_documents(docs, 4, seed=1)
    assert sample != sample_documents(docs, 4, seed=2)


def test_sample_skips_documents_too_short_to_ask_about():
    docs = corpus(3) + [Document("short", "", "too short")]
    assert "short" not in {d.doc_id for d in sample_documents(docs, 10, seed=0)}
    with pytest.raises(SearchGradeError, match="words"):
        sample_documents([Document("short", "", "too short")], 1, seed=0)


def test_jaccard_hand_values():
    assert jaccard({"a", "b", "c", "d"}, {"a", "b", "c", "e"}) == pytest.approx(3 / 5)
    assert jaccard(set(), set()) == 1.0


def test_filters_drop_copies_duplicates_and_near_duplicates():
    doc = Document("d1", "", "the quick brown fox jumps over the lazy dog near the river bank today")
    reply = QueryGenReply(
        natural=[
            "Why does the quick brown fox jumps over the lazy dog?",  # 9-token copy
            "what causes rust on iron",
            "What causes rust on iron?",  # exact duplicate once normalised
        ],
        keyword=["what causes iron rust on", "fox river"],  # Jaccard 5/5 = 1.0 -> near duplicate
    )
    settings = QueryGenSettings(n_natural=3, n_keyword=2)
    kept, dropped = filter_queries([doc], {"d1": reply}, settings)
    assert [(q.query_id, q.text, q.query_type, q.source_doc_id) for q in kept] == [
        ("g-d1-n2", "what causes rust on iron", "natural", "d1"),
        ("g-d1-k2", "fox river", "keyword", "d1"),
    ]
    assert dropped == {"empty": 0, "copied_span": 1, "duplicate": 1, "near_duplicate": 1}


def test_seven_shared_tokens_are_not_a_copy():
    doc = Document("d1", "", "the quick brown fox jumps over the lazy dog")
    reply = QueryGenReply(natural=["quick brown fox jumps over the lazy cat"], keyword=[])
    kept, _ = filter_queries([doc], {"d1": reply}, QueryGenSettings(n_natural=1, n_keyword=0))
    assert len(kept) == 1


def reply_for(kwargs, n):
    # A reply that names the document it was asked about, so queries differ per document.
    number = user_text(kwargs).split("Body of document ")[1].split(".")[0]
    return json.dumps({"natural": [f"how does topic {number} work", f"why is subject {number} odd"],
                       "keyword": [f"keyword{number} terms"]})


def client_for(stub) -> LLMClient:
    return LLMClient(LLMSettings(model="gen", output_mode="json_object_schema"), client=stub)


def test_generation_makes_typed_queries_with_their_source():
    stub = StubOpenAI(reply_for)
    settings = QueryGenSettings(n_docs=3, n_natural=2, n_keyword=1, seed=0)
    result = generate_queries(corpus(9), client_for(stub), MemoryCache(), settings)
    assert len(stub.requests) == 3
    assert len(result.queries) == 9
    assert {q.query_type for q in result.queries} == {"natural", "keyword"}
    for q in result.queries:
        assert q.query_id.startswith(f"g-{q.source_doc_id}-")
        assert q.source_doc_id in result.sampled_doc_ids
    assert stub.requests[0]["response_format"]["schema"]["properties"]["natural"]["maxItems"] == 2


def test_same_documents_seed_model_and_prompt_make_no_new_calls():
    cache = MemoryCache()
    settings = QueryGenSettings(n_docs=3, seed=5)
    first = generate_queries(corpus(9), client_for(StubOpenAI(reply_for)), cache, settings)
    stub = StubOpenAI(reply_for)
    second = generate_queries(corpus(9), client_for(stub), cache, settings)
    assert stub.requests == []
    assert second.queries == first.queries and second.cache_hits == 3
    # Another seed samples (and asks) again.
    third = StubOpenAI(reply_for)
    generate_queries(corpus(9), client_for(third), cache, QueryGenSettings(n_docs=3, seed=6))
    assert len(third.requests) == 3


def test_a_failed_document_gives_no_queries_and_is_recorded():
    def respond(kwargs, n):
        return "no idea" if "Body of document 0." in user_text(kwargs) else reply_for(kwargs, n)

    result = generate_queries(corpus(6), client_for(StubOpenAI(respond)), MemoryCache(),
                              QueryGenSettings(n_docs=6))
    assert set(result.failures) == {"d00"}
    assert all(q.source_doc_id != "d00" for q in result.queries)
