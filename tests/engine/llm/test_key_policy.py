"""The server's key goes only where the operator sent it; the judge cache knows which model answered.

Requests go through the real openai package and HTTP to local listeners that record every header.
"""

from __future__ import annotations

import json

import pytest

from searchgrade.core.records import Document, Query, SearchGradeError
from searchgrade.engine.llm.cache import MemoryCache
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.judge import judge_pairs
from searchgrade.engine.llm.key_policy import key_allowed, key_withheld_note, normalise_url, operator_urls
from searchgrade.engine.llm.settings import LLMSettings
from tests.engine.llm.fake_server import FakeOpenAIServer, chat_body

SECRET = "sk-server-key-never-leaves-0123456789"
PAIRS = [(Query("q1", "what is a planet"), Document("d1", "", "Mars is a planet."))]


def grade_reply(body, n):
    return 200, chat_body(json.dumps({"grade": 2, "reason": "ok"})), {}


def refuse_without_key(body, n):
    return 401, {"error": {"message": "Incorrect API key provided"}}, {}


@pytest.fixture
def server_env(monkeypatch):
    """The operator's environment: a key for the hosted API, no base URL, org and custom headers."""
    for name in ("OPENAI_BASE_URL", "SEARCHGRADE_LLM_ALLOWED_URLS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-of-the-operator")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Gateway-Token: gw-secret-42")


def _client(url: str) -> LLMClient:
    return LLMClient(LLMSettings(model="fake", base_url=url, timeout_s=10, max_retries=0))


def _leaks(server: FakeOpenAIServer) -> list[str]:
    found = []
    for method, path, headers in server.requests:
        for name, value in headers.items():
            if SECRET in value or "gw-secret-42" in value or "org-of-the-operator" in value:
                found.append(f"{method} {path} {name}")
    return found


def _authorizations(server: FakeOpenAIServer) -> set[str | None]:
    """The Authorization headers the server's chat requests carried."""
    return {next((v for k, v in h.items() if k.lower() == "authorization"), None)
            for m, _, h in server.requests if m == "POST"}


def test_a_typed_endpoint_gets_no_key_and_no_other_credential(server_env):
    with FakeOpenAIServer(grade_reply) as server:
        result = judge_pairs(PAIRS, _client(server.base_url), MemoryCache())
    assert result.grades[0].grade == 2
    assert server.requests, "the listener saw nothing"
    assert _leaks(server) == []
    assert _authorizations(server) == {None}


def test_the_configured_endpoint_and_the_allow_list_get_the_key(server_env, monkeypatch):
    with FakeOpenAIServer(grade_reply) as configured, FakeOpenAIServer(grade_reply) as listed:
        monkeypatch.setenv("OPENAI_BASE_URL", configured.base_url)
        monkeypatch.setenv("SEARCHGRADE_LLM_ALLOWED_URLS", f"https://other.example/v1, {listed.base_url}/")
        judge_pairs(PAIRS, _client(None), MemoryCache())  # None: the configured one
        judge_pairs(PAIRS, _client(listed.base_url), MemoryCache())
    for server in (configured, listed):
        assert _authorizations(server) == {f"Bearer {SECRET}"}


def test_an_endpoint_typed_on_the_command_line_is_the_operators(server_env):
    with FakeOpenAIServer(grade_reply) as server:
        with operator_urls([server.base_url]):
            client = _client(server.base_url)
        judge_pairs(PAIRS, client, MemoryCache())
        assert not key_allowed(server.base_url)  # only inside the command's block
    assert _authorizations(server) == {f"Bearer {SECRET}"}


def test_an_endpoint_that_wants_the_key_says_why_it_got_none(server_env):
    with FakeOpenAIServer(refuse_without_key) as server, pytest.raises(SearchGradeError) as info:
        judge_pairs(PAIRS, _client(server.base_url), MemoryCache())
    message = str(info.value)
    assert "answered 401" in message and "no API key is sent to this endpoint" in message
    assert "SEARCHGRADE_LLM_ALLOWED_URLS" in message and SECRET not in message


def test_urls_compare_in_one_spelling():
    assert normalise_url("HTTP://LocalHost:80/v1/") == normalise_url("http://localhost/v1")
    assert normalise_url(None) == normalise_url("https://api.openai.com:443/v1")
    assert normalise_url("http://user:pw@h:8080/v1") == "http://h:8080/v1"
    assert normalise_url("http://h:8080/v1") != normalise_url("http://h:8081/v1")


def test_the_note_is_there_only_when_a_key_is_withheld():
    env = {"OPENAI_API_KEY": SECRET}
    assert key_withheld_note("http://10.1.2.3:9/v1", env)
    assert key_withheld_note(None, env) is None
    assert key_withheld_note("http://10.1.2.3:9/v1", {}) is None  # no key, nothing withheld


def test_cached_grades_follow_the_model_the_endpoint_reports_not_its_name(server_env):
    cache = MemoryCache()
    with FakeOpenAIServer(grade_reply) as first, FakeOpenAIServer(grade_reply) as moved:
        # Same model behind a moved endpoint: llama.cpp's listing, whose "created" is the request time.
        for i, server in enumerate((first, moved)):
            server.models = [{"id": "/models/gemma.gguf", "object": "model", "created": 1700000000 + i,
                              "meta": {"n_params": 268098176}}]
        judge_pairs(PAIRS, _client(first.base_url), cache)
        again = judge_pairs(PAIRS, _client(moved.base_url), cache)
        assert again.cache_hits == 1 and moved.posts == 0
    with FakeOpenAIServer(grade_reply) as other:
        # Another model loaded behind the same name: nothing cached applies.
        other.models = [{"id": "/models/llama-70b.gguf", "object": "model", "meta": {"n_params": 7e10}}]
        fresh = judge_pairs(PAIRS, _client(other.base_url), cache)
        assert fresh.cache_hits == 0 and other.posts == 1


def test_an_endpoint_without_a_model_listing_is_known_by_its_url():
    class NoListing:
        class chat:  # noqa: N801
            class completions:  # noqa: N801
                @staticmethod
                def create(**kwargs):
                    raise AssertionError("not called")

    client = LLMClient(LLMSettings(model="m", base_url="http://h:1/v1"), client=NoListing(), api_key="k")
    assert client.judge_identity == "m|url:http://h:1/v1"
