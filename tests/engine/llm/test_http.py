"""The client through the real openai package and HTTP, against a scripted local server."""

from __future__ import annotations

import json

from searchgrade.core.records import Document, Query
from searchgrade.engine.llm.cache import MemoryCache
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.judge import FAILURE_PREFIX, judge_pairs
from searchgrade.engine.llm.settings import LLMSettings
from tests.engine.llm.fake_server import FakeOpenAIServer, chat_body

DOCS = [Document(f"d{i}", "", f"Document number {i} about topic {i}.") for i in range(4)]
QUERIES = [Query(f"q{i}", f"question {i}") for i in range(4)]


def llama_cpp_like(body, n):
    """Rejects json_schema like llama.cpp; 429 once; invalid JSON on every third request."""
    if body.get("response_format", {}).get("type") == "json_schema":
        return 400, {"error": {"message": "json_schema is not supported", "code": 400}}, {}
    if n == 1:
        return 429, {"error": {"message": "busy"}}, {"Retry-After": "0.05"}
    prompt = body["messages"][1]["content"]
    if "question 3" in prompt and "Document number 3" in prompt:
        return 200, chat_body('{"grade": "three"}'), {}  # always invalid for this pair
    if n % 3 == 0:
        return 200, chat_body('{"grade": 2, "reason": '), {}  # cut-off JSON
    return 200, chat_body(json.dumps({"grade": n % 4, "reason": f"reply {n}"})), {}


def test_calls_reported_equal_requests_received_and_invalid_replies_never_grade():
    pairs = [(q, d) for q in QUERIES for d in DOCS]
    with FakeOpenAIServer(llama_cpp_like) as server:
        client = LLMClient(LLMSettings(model="fake", base_url=server.base_url, concurrency=4,
                                       timeout_s=10), api_key="test-key")
        cache = MemoryCache()
        result = judge_pairs(pairs, client, cache)
        usage = client.usage.snapshot()["judge"]
        assert usage["requests"] == server.posts
        assert usage["retries"] == 1  # the 429
        assert client.output_mode == "json_object_schema"
        assert client.rejected_modes == ["json_schema"]
        grades = {(g.query_id, g.doc_id): g for g in result.grades}
        assert len(grades) == 16
        failed = [g for g in result.grades if g.grade is None]
        assert result.failures == len(failed) >= 1
        assert grades[("q3", "d3")].grade is None
        assert all(g.reason.startswith(FAILURE_PREFIX) for g in failed)
        # Every grade came from a valid reply: its reason is the one the server sent with it.
        assert all(g.reason.startswith("reply ") for g in result.grades if g.grade is not None)
        assert usage["ok"] + usage["failures"] == 16
        assert usage["prompt_tokens"] == 20 * (server.posts - 1 - 1)  # minus the 400 and the 429
        # An unchanged second run asks again only for the failures, and still counts right.
        before = server.posts
        again = judge_pairs(pairs, client, cache)
        assert again.judged == result.failures and again.cache_hits == 16 - result.failures
        assert client.usage.snapshot()["judge"]["requests"] == server.posts > before
