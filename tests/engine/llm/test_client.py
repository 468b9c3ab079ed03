from __future__ import annotations

import json

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.schemas import JudgeReply, judge_schema
from searchgrade.engine.llm.settings import LLMSettings
from tests.engine.llm.stub import (
    StubOpenAI,
    always,
    cut_short_error,
    judge_json,
    refused_error,
    status_error,
    timeout_error,
)

MESSAGES = [{"role": "system", "content": "judge"}, {"role": "user", "content": "grade it, JSON"}]


def make_client(stub, sleeps=None, **settings) -> LLMClient:
    settings.setdefault("output_mode", "json_object_schema")
    recorder = sleeps.append if sleeps is not None else (lambda s: None)
    return LLMClient(LLMSettings(model="stub-model", **settings), client=stub, sleep=recorder)


def call(client: LLMClient):
    return client.complete("judge", MESSAGES, JudgeReply, judge_schema())


def test_valid_reply_is_one_request_and_counted():
    stub = StubOpenAI(always(judge_json(3, "dedicated")))
    client = make_client(stub)
    reply = call(client)
    assert reply.value == JudgeReply(grade=3, reason="dedicated")
    usage = client.usage.snapshot()["judge"]
    assert (usage["requests"], usage["ok"], usage["failures"]) == (1, 1, 0)
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (10, 5)
    assert len(stub.requests) == 1


def test_garbage_reply_is_retried_then_recorded_as_failure():
    stub = StubOpenAI(always("I think it is a 2!"))
    client = make_client(stub, invalid_reply_retries=2)
    reply = call(client)
    assert reply.value is None
    assert reply.error.startswith("invalid reply after 3 attempts")
    usage = client.usage.snapshot()["judge"]
    assert (usage["requests"], usage["invalid_replies"], usage["failures"], usage["ok"]) == (3, 3, 1, 0)
    # The retry tells the model what was wrong.
    assert "not valid" in stub.requests[1]["messages"][-1]["content"]


def test_garbage_then_valid_reply_succeeds():
    stub = StubOpenAI(lambda kw, n: "garbage" if n == 0 else judge_json(1))
    client = make_client(stub)
    reply = call(client)
    assert reply.value.grade == 1
    assert client.usage.snapshot()["judge"]["requests"] == 2


def test_timeout_is_retried_with_exponential_backoff():
    stub = StubOpenAI(lambda kw, n: timeout_error() if n < 2 else judge_json())
    sleeps: list[float] = []
    client = make_client(stub, sleeps, backoff_s=1.0)
    assert call(client).value.grade == 2
    assert len(stub.requests) == 3
    assert 1.0 <= sleeps[0] <= 1.25 and 2.0 <= sleeps[1] <= 2.5
    usage = client.usage.snapshot()["judge"]
    assert (usage["requests"], usage["retries"], usage["ok"]) == (3, 2, 1)


def test_429_honours_retry_after():
    stub = StubOpenAI(lambda kw, n: status_error(429, "slow down", {"retry-after": "7"}) if n == 0
                      else judge_json())
    sleeps: list[float] = []
    client = make_client(stub, sleeps)
    assert call(client).value is not None
    assert sleeps == [7.0]
    assert client.usage.snapshot()["judge"]["requests"] == 2


def test_5xx_is_retried_then_recorded_as_failure():
    stub = StubOpenAI(always(status_error(503, "overloaded")))
    client = make_client(stub, max_retries=3)
    reply = call(client)
    assert reply.value is None
    assert "HTTP 503" in reply.error and "gave up after 4 requests" in reply.error
    usage = client.usage.snapshot()["judge"]
    assert (usage["requests"], usage["retries"], usage["failures"]) == (4, 3, 1)


def test_json_schema_rejected_falls_back_and_the_mode_is_remembered():
    def respond(kwargs, n):
        if kwargs.get("response_format", {}).get("type") == "json_schema":
            return status_error(422, "response_format.type: Input should be 'text' or 'json_object'")
        return judge_json()

    stub = StubOpenAI(respond)
    client = make_client(stub, output_mode=None)
    assert call(client).value is not None
    assert call(client).value is not None
    assert client.output_mode == "json_object_schema"
    assert client.rejected_modes == ["json_schema"]
    kinds = [r.get("response_format", {}).get("type") for r in stub.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert stub.requests[1]["response_format"]["schema"] == judge_schema()
    assert client.usage.snapshot()["judge"]["requests"] == 3


def test_plain_modes_describe_the_schema_in_the_prompt():
    def respond(kwargs, n):
        return status_error(400, "unsupported") if "response_format" in kwargs else judge_json()

    stub = StubOpenAI(respond)
    client = make_client(stub, output_mode=None)
    assert call(client).value is not None
    assert client.output_mode == "prompt"
    assert client.rejected_modes == ["json_schema", "json_object_schema", "json_object"]
    assert '"enum": [0, 1, 2, 3]' in stub.requests[-1]["messages"][-1]["content"]


def test_strict_json_schema_mode_sends_a_strict_schema():
    stub = StubOpenAI(always(judge_json()))
    client = make_client(stub, output_mode=None)
    call(client)
    sent = stub.requests[0]["response_format"]["json_schema"]
    assert sent["strict"] is True
    assert "maxLength" not in json.dumps(sent["schema"])
    assert client.output_mode == "json_schema"


def test_authentication_error_stops_without_revealing_the_key():
    secret = "sk-test-abcdef123456"
    stub = StubOpenAI(always(status_error(401, f"Incorrect API key provided: {secret}")))
    client = LLMClient(LLMSettings(model="m", output_mode="json_object"), api_key=secret, client=stub)
    with pytest.raises(SearchGradeError) as info:
        call(client)
    assert secret not in str(info.value)
    assert "401" in str(info.value)


def test_settings_never_hold_the_api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-123456")
    client = LLMClient(LLMSettings(model="m", base_url="http://127.0.0.1:9/v1"))
    assert "sk-secret" not in json.dumps(client.settings.to_json())


def test_hosted_api_without_a_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(SearchGradeError, match="OPENAI_API_KEY"):
        LLMClient(LLMSettings(model="m"))


def test_concurrency_is_bounded():
    stub = StubOpenAI(always(judge_json()), delay_s=0.02)
    client = make_client(stub, concurrency=3)
    results = dict(client.map(lambda i: call(client), list(range(12))))
    assert sorted(results) == list(range(12))
    assert stub.max_in_flight == 3
    assert client.usage.snapshot()["judge"]["requests"] == 12


def test_first_call_negotiates_alone_so_a_rejected_mode_is_tried_once():
    def respond(kwargs, n):
        if kwargs.get("response_format", {}).get("type") == "json_schema":
            return status_error(400, "json_schema not supported")
        return judge_json()

    stub = StubOpenAI(respond, delay_s=0.01)
    client = make_client(stub, output_mode=None, concurrency=4)
    list(client.map(lambda i: call(client), list(range(8))))
    kinds = [r.get("response_format", {}).get("type") for r in stub.requests]
    assert kinds.count("json_schema") == 1
    assert len(stub.requests) == 9


def test_models_refusing_max_tokens_get_max_completion_tokens():
    def respond(kwargs, n):
        if "max_tokens" in kwargs:
            return status_error(400, "Unsupported parameter: 'max_tokens'. Use "
                                     "'max_completion_tokens' instead.")
        return judge_json()

    stub = StubOpenAI(respond)
    client = make_client(stub)
    assert call(client).value is not None and call(client).value is not None
    assert ["max_tokens" in r for r in stub.requests] == [True, False, False]
    assert client.usage.snapshot()["judge"]["requests"] == 3


def test_the_wait_for_a_request_permit_is_not_counted_as_latency():
    import time
    from contextlib import contextmanager

    @contextmanager
    def slow_gate():  # a permit that takes 0.5 s to come (engine/ray/stage_runner.py's cluster-wide one)
        time.sleep(0.5)
        yield

    stub = StubOpenAI(always(judge_json(3, "dedicated")), delay_s=0.05)
    client = make_client(stub)
    client.request_gate = slow_gate
    assert call(client).value is not None
    assert 0.04 < client.usage.snapshot()["judge"]["latency_s"] < 0.4


def test_an_endpoint_that_refuses_every_connection_stops_the_stage_after_a_few_refusals():
    # A real openai client at a port where nothing listens.
    import socket

    from searchgrade.engine.llm.client import REFUSALS_TO_STOP

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    client = LLMClient(LLMSettings(model="m", base_url=f"http://127.0.0.1:{port}/v1", output_mode="json_object"),
                       sleep=sleeps.append)
    with pytest.raises(SearchGradeError, match=f"refused {REFUSALS_TO_STOP} connections in a row"):
        call(client)
    # Three requests, two waits between them: not the item's five requests, nor every later item's.
    assert client.usage.snapshot()["judge"]["requests"] == REFUSALS_TO_STOP
    assert len(sleeps) == REFUSALS_TO_STOP - 1


def test_refusals_count_in_a_row_and_a_reply_cut_short_is_not_one():
    # Refused, refused, answered; refused, cut short, refused, answered: never three in a row.
    replies = [refused_error(), refused_error(), judge_json(), refused_error(), cut_short_error(), refused_error(),
               refused_error(), judge_json()]
    stub = StubOpenAI(lambda kw, n: replies[n])
    client = make_client(stub)
    assert call(client).value.grade == 2
    assert call(client).value.grade == 2
    assert len(stub.requests) == 8
