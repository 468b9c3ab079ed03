"""HTTP strategies against a real local search server process (Elasticsearch-shaped replies)."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.base import QueryBatch
from searchgrade.indexes.declared.http import HttpNode
from searchgrade.indexes.declared.spec import parse_spec
from searchgrade.indexes.executor import Executor
from tests.conftest import TINY_QUERIES, write_beir

from .conftest import SearchServer

QIDS = list(TINY_QUERIES)
TEXTS = list(TINY_QUERIES.values())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = write_beir(tmp_path_factory.mktemp("beir") / "tiny")
    server = SearchServer(folder, tmp_path_factory.mktemp("server-data"))
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def healthy(server):
    server.control()
    yield


def es(server, **keys):
    table = {"kind": "elasticsearch", "host": server.url, "index": "tiny",
             "query": '{"match": {"text": {{query}}}}', "backoff_s": 0.01, **keys}
    return parse_spec("es", table, "strategies.toml")


def run(node, texts=TEXTS, k=3):
    ids = [f"q{i}" for i in range(len(texts))]
    execution = Executor({node.name: node}, [node.name], k).run(QueryBatch(ids, texts))
    return execution.hits[node.name], execution.failures[node.name], execution.documents[node.name]


def test_the_elasticsearch_preset_reads_ids_scores_and_sources(server):
    hits, failures, documents = run(HttpNode(es(server)))
    assert failures == {}
    assert [h.docs[0].doc_id for h in hits] == ["d1", "d3", "d6", "d10", "d11"]
    assert all(h.latency_s > 0 for h in hits)
    assert all(d.score > 0 for h in hits for d in h.docs)
    assert documents["d3"].title == "Jupiter"


def test_a_get_api_with_its_own_reply_shape(server):
    spec = parse_spec("mine", {"kind": "http", "url": server.url + "/search?q={{query}}&n={{k}}",
                               "hits": "results", "id": "doc.id", "title": "doc.name",
                               "score": "relevance"}, "s.toml")
    hits, failures, _ = run(HttpNode(spec))
    assert failures == {} and [h.docs[0].doc_id for h in hits] == ["d1", "d3", "d6", "d10", "d11"]


def test_a_wrong_mapping_names_the_jmespath_and_shows_the_start_of_the_reply(server):
    hits, failures, _ = run(HttpNode(es(server, hits="hits.items")), texts=TEXTS[:1])
    (failure,) = failures.values()
    assert hits == [None]
    assert failure.error.startswith("hits 'hits.items' finds nothing in the reply (it starts with: {")
    assert '"hits": {"hits": [{"_id": "d1"' in failure.error and failure.attempts == 1
    _, failures, _ = run(HttpNode(es(server, id="_source.id")), texts=TEXTS[:1])
    assert next(iter(failures.values())).error.startswith("id '_source.id' finds nothing in hit 1")


def test_500_on_every_third_request_fails_those_queries_without_retries_and_not_with_them(server):
    server.control(fail_every=3)
    hits, failures, _ = run(HttpNode(es(server, retries=0, concurrency=1)), texts=TEXTS * 2)
    assert sorted(failures) == ["q2", "q5", "q8"]
    assert all("HTTP 500" in f.error for f in failures.values())
    assert [h is None for h in hits] == [i in (2, 5, 8) for i in range(10)]
    server.control(fail_every=3)
    hits, failures, _ = run(HttpNode(es(server, retries=2, concurrency=1)), texts=TEXTS * 2)
    assert failures == {} and all(h is not None for h in hits)
    assert server.stats()["failed"] >= 3


def test_a_closed_connection_is_a_failure_of_that_query(server):
    server.control(close_every=2)
    hits, failures, _ = run(HttpNode(es(server, retries=0, concurrency=2)), texts=TEXTS)
    assert len(failures) == 2
    assert all("cannot connect" in f.error or "closed" in f.error for f in failures.values())


def test_connection_refused_and_401_are_one_line_each(server, tmp_path):
    spec = parse_spec("down", {"kind": "opensearch", "host": "http://127.0.0.1:9", "index": "x",
                               "query": '{"match": {"text": {{query}}}}', "retries": 1, "backoff_s": 0.01},
                      "s.toml")
    _, failures, _ = run(HttpNode(spec), texts=TEXTS[:1])
    failure = next(iter(failures.values()))
    assert "cannot connect to http://127.0.0.1:9/x/_search (connection refused)" in failure.error
    assert failure.attempts == 2 and "\n" not in failure.error
    spec = es(server, headers={"X-Require": "Bearer right", "Authorization": "env:SG_TEST_AUTH"})
    node = HttpNode(spec, environ={"SG_TEST_AUTH": "Bearer wrong"})
    _, failures, _ = run(node, texts=TEXTS[:1])
    failure = next(iter(failures.values()))
    assert "HTTP 401" in failure.error and "check the credentials" in failure.error
    assert failure.attempts == 1  # a 401 is not retried
    with pytest.raises(SearchGradeError, match="SG_TEST_AUTH"):
        HttpNode(spec, environ={})


def test_the_secret_is_sent_but_never_in_the_declaration(server):
    spec = es(server, headers={"X-Require": "Bearer right", "Authorization": "env:SG_TEST_AUTH"})
    hits, failures, _ = run(HttpNode(spec, environ={"SG_TEST_AUTH": "Bearer right"}), texts=TEXTS[:1])
    assert failures == {} and hits[0] is not None
    assert spec.to_json()["headers"]["Authorization"] == "env:SG_TEST_AUTH"


