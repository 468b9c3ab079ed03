"""An LLM endpoint typed in the browser is held to the outbound policy on every connection, wherever
its run goes on (the settings carry where it was typed); the operator's endpoints are not.

Requests go through the real openai package (and its httpx) to a local listener that records every
request; a "rebinding" name is a resolver that answers a public address first and loopback after.
"""

from __future__ import annotations

import json
import socket

import pytest

from searchgrade.core.outbound import ENV_ALLOWED_HOSTS, OutboundPolicy, OutboundRefused
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.llm.client import LLMClient, _httpx_of
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.run.config import RunConfig
from tests.engine.llm.fake_server import FakeOpenAIServer, chat_body

REPLY = {"type": "object", "properties": {"grade": {"type": "integer"}}, "required": ["grade"]}


def graded(body, n):
    return 200, chat_body(json.dumps({"grade": 2})), {}


def ask(client: LLMClient) -> None:
    from pydantic import BaseModel

    class Reply(BaseModel):
        grade: int

    reply = client.complete("judge", [{"role": "user", "content": "grade it"}], Reply, REPLY)
    assert reply.value is not None and reply.value.grade == 2, reply.error


@pytest.fixture(autouse=True)
def no_operator_endpoint(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SEARCHGRADE_LLM_ALLOWED_URLS", ENV_ALLOWED_HOSTS):
        monkeypatch.delenv(name, raising=False)


def test_a_typed_endpoint_on_an_exposed_app_is_refused_before_any_request():
    with FakeOpenAIServer(graded) as listener:
        settings = LLMSettings(model="m", base_url=listener.base_url, declared_in="exposed app", max_retries=0)
        with pytest.raises(OutboundRefused, match="^LLM endpoint base URL: 127.0.0.1 is a loopback address"):
            LLMClient(settings)
    assert listener.requests == []


def test_the_same_endpoint_is_reached_when_the_operator_typed_it_allowed_it_or_the_app_is_loopback(monkeypatch):
    with FakeOpenAIServer(graded) as listener:
        ask(LLMClient(LLMSettings(model="m", base_url=listener.base_url, max_retries=0)))
        ask(LLMClient(LLMSettings(model="m", base_url=listener.base_url, declared_in="app", max_retries=0)))
        monkeypatch.setenv(ENV_ALLOWED_HOSTS, "127.0.0.0/8")
        ask(LLMClient(LLMSettings(model="m", base_url=listener.base_url, declared_in="exposed app", max_retries=0)))
    assert listener.posts == 3


def test_a_name_that_resolves_to_loopback_after_the_check_reaches_nothing(monkeypatch):
    """DNS rebinding: the name is public when the URL is checked, loopback when connected to; the
    connection is checked again, and the run stops with one line (no retry mends it)."""
    real = socket.getaddrinfo
    answers = iter(["93.184.216.34"])

    def rebinding(host, port, *args, **kwargs):
        if host == "rebind.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers, "127.0.0.1"), port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with FakeOpenAIServer(graded) as listener:
        port = listener.httpd.server_address[1]
        settings = LLMSettings(model="m", base_url=f"http://rebind.example:{port}/v1", declared_in="exposed app",
                               max_retries=2)
        client = LLMClient(settings)  # checked: 93.184.216.34, public
        with pytest.raises(SearchGradeError, match="rebind.example resolves to 127.0.0.1"):
            ask(client)
    assert listener.requests == []


def test_the_guarded_transport_is_the_openai_clients_own_httpx():
    import openai

    httpx = _httpx_of(openai)
    with FakeOpenAIServer(graded) as listener:
        url = listener.base_url.replace("127.0.0.1", "localhost") + "/models"
        for exposed, reached in ((True, False), (False, True)):
            transport = OutboundPolicy.for_browser(exposed, {}).httpx_transport(httpx)
            with httpx.Client(transport=transport, trust_env=False) as client:
                if reached:
                    assert client.get(url).status_code == 200
                else:
                    with pytest.raises(OutboundRefused, match="localhost resolves to 127.0.0.1"):
                        client.get(url)
    assert len(listener.requests) == 1


def test_where_an_endpoint_was_typed_is_stored_with_the_run_and_read_back():
    typed = RunConfig(mode="llm", llm=LLMSettings(model="m", base_url="http://10.1.2.3/v1", declared_in="exposed app"))
    assert RunConfig.from_json(json.loads(json.dumps(typed.to_json()))).llm.declared_in == "exposed app"
    # The operator's endpoint is stored as before the field existed.
    operator = RunConfig(mode="llm", llm=LLMSettings(model="m", base_url="http://10.1.2.3/v1"))
    assert "declared_in" not in operator.to_json()["llm"]
    assert RunConfig.from_json(operator.to_json()).llm.declared_in == ""


def test_a_suite_made_from_a_run_keeps_where_its_endpoint_was_typed(tmp_path):
    """A suite's runs (and the worker that starts them) connect as the run it was made from did."""
    from searchgrade.engine.store import Store
    from searchgrade.engine.suites.definition import suite_config, suite_from_run
    from tests.pages.synthetic import tiny_spec, write_run

    store = Store(tmp_path)
    typed = {"model": "m", "base_url": "http://10.1.2.3/v1", "declared_in": "exposed app"}
    run_id = write_run(store, tiny_spec(config={"llm": typed, "strategies": ["fulltext"]}))
    suite = suite_from_run(store, "nightly", run_id)
    assert suite_config(suite).llm.declared_in == "exposed app"
