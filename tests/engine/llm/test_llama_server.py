"""End to end against a real OpenAI-compatible server: llama-cpp-python with a 270M model.

The model's grades are meaningless; these tests check the path: output-mode negotiation (llama.cpp
rejects json_schema and takes json_object + schema), concurrency, accounting against the
requests the server received, caching, and failure recording.
"""

from __future__ import annotations

import pytest

from searchgrade.core.records import Document, Query
from searchgrade.engine.llm.cache import StoreCache
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.judge import FAILURE_PREFIX, judge_pairs
from searchgrade.engine.llm.querygen import QueryGenSettings, generate_queries
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.store import Store

pytestmark = [pytest.mark.llm_server, pytest.mark.slow]

DOCS = [
    Document("d1", "Rust", "Rust is iron oxide. It forms when iron reacts with oxygen and water over "
             "time, which is why bridges and ships are painted and coated."),
    Document("d2", "Bread", "Bread is made from flour, water and yeast. The yeast ferments sugars and "
             "releases gas, which makes the dough rise before baking in a hot oven."),
]
QUERIES = [Query("q1", "what causes rust"), Query("q2", "how does bread rise"),
           Query("q3", "iron corrosion")]


def client_for(base_url: str, **settings) -> LLMClient:
    settings.setdefault("max_tokens", 64)
    return LLMClient(LLMSettings(model="gemma-3-270m", base_url=base_url, timeout_s=120, **settings))


def test_judging_through_a_real_server_counts_every_request_and_caches(counting_proxy, tmp_path):
    proxy = counting_proxy
    cache = StoreCache(Store(tmp_path))
    pairs = [(q, d) for q in QUERIES for d in DOCS]
    pairs += pairs[:2]  # other strategies returned the same pairs
    client = client_for(proxy.base_url, concurrency=3)

    result = judge_pairs(pairs, client, cache)

    assert client.output_mode == "json_object_schema"
    assert client.rejected_modes == ["json_schema"]
    usage = client.usage.snapshot()["judge"]
    assert usage["requests"] == proxy.posts
    assert usage["ok"] + usage["failures"] == 6 == result.judged
    assert proxy.max_in_flight >= 2
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert len(result.grades) == 6
    for grade in result.grades:
        assert grade.grade in (0, 1, 2, 3) or grade.reason.startswith(FAILURE_PREFIX)
        assert grade.model == "gemma-3-270m" and grade.prompt_version.startswith("judge_v1-")
    assert result.failures == sum(g.grade is None for g in result.grades)

    posts = proxy.posts
    again_client = client_for(proxy.base_url, concurrency=3)
    again = judge_pairs(pairs, again_client, StoreCache(Store(tmp_path)))
    # Only the failures are asked again (each at most 1 + 2 invalid-reply retries).
    assert again.judged == result.failures
    assert again_client.usage.snapshot()["judge"].get("requests", 0) == proxy.posts - posts
    assert proxy.posts - posts <= 3 * result.failures
    if result.failures == 0:
        assert proxy.posts == posts and again.grades == result.grades


def test_replies_cut_short_are_recorded_as_failures_not_grades(counting_proxy, tmp_path):
    proxy = counting_proxy
    client = client_for(proxy.base_url, max_tokens=3, invalid_reply_retries=1, concurrency=2,
                        output_mode="json_object_schema")
    result = judge_pairs([(QUERIES[0], DOCS[0]), (QUERIES[1], DOCS[1])], client,
                         StoreCache(Store(tmp_path)))
    assert [g.grade for g in result.grades] == [None, None]
    assert all(g.reason.startswith(FAILURE_PREFIX + "invalid reply after 2 attempts") for g in result.grades)
    usage = client.usage.snapshot()["judge"]
    assert (usage["requests"], usage["invalid_replies"], usage["failures"]) == (4, 4, 2)
    assert proxy.posts == 4
    assert Store(tmp_path).llm_cache_get("judge", ["anything"]) == {}


def test_query_generation_through_a_real_server(counting_proxy, tmp_path):
    proxy = counting_proxy
    settings = QueryGenSettings(n_docs=2, n_natural=1, n_keyword=1, min_words=10, min_chars=50)
    client = client_for(proxy.base_url, max_tokens=80, concurrency=2)
    result = generate_queries(DOCS, client, StoreCache(Store(tmp_path)), settings)

    assert result.sampled_doc_ids == ["d1", "d2"]
    usage = client.usage.snapshot()["querygen"]
    assert usage["requests"] == proxy.posts
    assert usage["ok"] + usage["failures"] == 2
    for query in result.queries:
        assert query.query_type in ("natural", "keyword") and query.source_doc_id in ("d1", "d2")
    assert set(result.failures) <= {"d1", "d2"}

    posts = proxy.posts
    again = generate_queries(DOCS, client_for(proxy.base_url, max_tokens=80), StoreCache(Store(tmp_path)),
                             settings)
    assert again.cache_hits == 2 - len(result.failures)
    assert proxy.posts - posts <= 3 * len(result.failures)
    if not result.failures:
        assert proxy.posts == posts and again.queries == result.queries
