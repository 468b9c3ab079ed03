"""Declared rerankers over HTTP (TEI, Cohere shapes; presets; the template) against a real server."""

from __future__ import annotations

import pytest

from searchgrade.core.records import ScoredDoc, SearchGradeError
from searchgrade.indexes.base import Answer, Failure, QueryBatch
from searchgrade.indexes.declared.spec import load_rerankers_file, load_strategies_file, parse_reranker
from searchgrade.indexes.executor import Executor
from searchgrade.indexes.rerank.http import HttpReranker
from searchgrade.indexes.rerank.service import QueryScores, RerankFailed, ServiceRerankNode
from tests.indexes.rerank.rerank_server import expected_order, known_score

QUERY = "red planet rovers"
TEXTS = ["Mars is the red planet; rovers explored it.", "Jupiter is a gas giant.", "Red wine.",
         "A planet.", "Rovers on the red planet Mars, red dust."]


def tei(url: str, **extra) -> HttpReranker:
    return HttpReranker(parse_reranker("tei", {"kind": "tei", "url": url, "retries": 1, "backoff_s": 0, **extra}))


def test_presets_fill_in_the_services_shapes():
    cohere = parse_reranker("co", {"kind": "cohere", "model": "rerank-v3.5", "api_key": "env:CO_KEY"}).options
    assert cohere["url"] == "https://api.cohere.com/v2/rerank"
    assert (cohere["results"], cohere["index"], cohere["score"]) == ("results", "index", "relevance_score")
    assert '"top_n": {{top_n}}' in cohere["body"]
    voyage = parse_reranker("vo", {"kind": "voyage", "model": "rerank-2"}).options
    assert voyage["results"] == "data" and '"top_k": {{top_n}}' in voyage["body"]
    jina = parse_reranker("ji", {"kind": "jina", "model": "jina-reranker-v2-base-multilingual"}).options
    assert jina["url"] == "https://api.jina.ai/v1/rerank" and jina["results"] == "results"
    t = parse_reranker("t", {"kind": "tei", "url": "http://127.0.0.1:8080"}).options
    assert t["url"] == "http://127.0.0.1:8080/rerank" and '"texts": {{documents}}' in t["body"]
    assert t["batch_size"] == 32


@pytest.mark.parametrize("name, table, fragment", [
    ("t", {"kind": "tei"}, "missing key 'url'"),
    ("co", {"kind": "cohere"}, "needs the model"),
    ("co", {"kind": "cohere", "model": "m", "api_key": "sk-live-123"}, "literal secret"),
    ("co", {"kind": "cohere", "model": "m", "headers": {"Authorization": "Bearer x"}}, "literal secret"),
    ("h", {"kind": "http", "url": "http://h/r", "body": '{"q": {{query}}}', "results": "r", "index": "i",
           "score": "s"}, "no {{documents}}"),
    ("h", {"kind": "http", "url": "http://h/r", "body": '{"q": {{query}}, "d": {{documents}}}', "results": "r[",
           "index": "i", "score": "s"}, "not a valid JMESPath"),
    ("h", {"kind": "http", "url": "http://h/r", "body": '{"q": "{{query}}", "d": {{documents}}}', "results": "r",
           "index": "i", "score": "s"}, "not valid JSON"),
    ("h", {"kind": "http", "url": "http://h/r"}, "missing key 'body'"),
    ("t", {"kind": "tei", "url": "http://h", "depth": 0}, "depth must be >= 1"),
    ("t", {"kind": "tei", "url": "http://h", "top": 3}, "unknown key 'top'"),
    ("t", {"kind": "nope"}, "unknown kind 'nope'"),
    ("my_tei", {"kind": "tei", "url": "http://h"}, "no '_'"),
    ("rerank", {"kind": "tei", "url": "http://h"}, "kept for the run's default reranker"),
])
def test_a_bad_reranker_declaration_is_one_line_naming_it(name, table, fragment):
    with pytest.raises(SearchGradeError) as exc:
        parse_reranker(name, table, "s.toml")
    assert fragment in str(exc.value) and "\n" not in str(exc.value)
    assert f"[reranker.{name}]" in str(exc.value) or "reranker name" in str(exc.value)


def test_a_strategy_naming_an_undeclared_reranker_is_refused(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[reranker.tei]\nkind = "tei"\nurl = "http://127.0.0.1:1"\n'
                    '[strategy.es]\nkind = "elasticsearch"\nindex = "d"\nquery = \'{"match": {"t": {{query}}}}\'\n'
                    'rerank = ["cohere"]\n')
    with pytest.raises(SearchGradeError, match=r"rerank names 'cohere'.*\[reranker.cohere\].*use one of tei"):
        load_strategies_file(path)


def test_a_file_of_rerankers_only_is_a_strategies_file(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[reranker.tei]\nkind = "tei"\nurl = "http://127.0.0.1:1/rerank"\ndepth = 7\n')
    assert load_strategies_file(path) == {}
    assert load_rerankers_file(path)["tei"].depth == 7


def test_tei_scores_are_the_servers_in_the_order_sent_in_batches_of_its_limit(rerank_server):
    reranker = tei(rerank_server.url, batch_size=2)
    scores = reranker.rerank(QUERY, TEXTS)
    assert scores == pytest.approx([known_score(QUERY, t) for t in TEXTS])
    assert [r["n"] for r in rerank_server.requests] == [2, 2, 1]


def test_a_batch_above_the_services_limit_is_a_failed_query_with_the_fix(rerank_server):
    rerank_server.max_batch = 4
    with pytest.raises(RerankFailed, match="HTTP 413.*lower batch_size"):
        tei(rerank_server.url, batch_size=8).rerank(QUERY, TEXTS)


def test_cohere_sends_model_and_key_from_the_environment(rerank_server, monkeypatch):
    monkeypatch.setenv("TEST_CO_KEY", "sk-test")
    spec = parse_reranker("co", {"kind": "cohere", "url": rerank_server.url, "model": "rerank-v3.5",
                                 "api_key": "env:TEST_CO_KEY"})
    assert spec.options["url"].endswith("/v2/rerank") and spec.to_json()["api_key"] == "env:TEST_CO_KEY"
    scores = HttpReranker(spec).rerank(QUERY, TEXTS)
    assert scores == pytest.approx([known_score(QUERY, t) for t in TEXTS])
    assert rerank_server.requests[-1]["model"] == "rerank-v3.5"
    assert rerank_server.requests[-1]["authorization"] == "Bearer sk-test"
    monkeypatch.delenv("TEST_CO_KEY")
    with pytest.raises(SearchGradeError, match=r"api_key reads \$TEST_CO_KEY.*export TEST_CO_KEY"):
        HttpReranker(spec)


@pytest.mark.parametrize("fault, fragment", [
    ("short", "returned 4 scored items for the 5 documents sent"),
    ("range", "returned index 5 for 5 documents sent"),
    ("garbage", "is not JSON"),
    ("500", r"HTTP 500 .*\(after 2 attempts\)"),
])
def test_a_reply_that_does_not_fit_fails_the_query_in_one_line(rerank_server, fault, fragment):
    rerank_server.faults[QUERY] = fault
    with pytest.raises(RerankFailed, match=fragment) as exc:
        tei(rerank_server.url).rerank(QUERY, TEXTS)
    assert "\n" not in str(exc.value)


def test_429_is_retried_after_retry_after(rerank_server):
    rerank_server.faults[QUERY] = "429"
    assert tei(rerank_server.url).rerank(QUERY, TEXTS) == pytest.approx([known_score(QUERY, t) for t in TEXTS])
    assert len(rerank_server.requests) == 2


class _Base:
    """A base strategy answering a fixed list per query."""

    name, inputs = "base", ()

    def __init__(self, lists):
        self.lists = lists

    def input_depth(self, depth):
        return depth

    def answer(self, batch, depth, inputs):
        return [Answer([ScoredDoc(d, 1.0 / r, r) for r, d in enumerate(self.lists[q][:depth], 1)], 0.001)
                for q in batch.ids]


def test_the_node_reorders_by_the_reranker_fails_only_its_queries_and_scores_a_pair_once(rerank_server):
    contents = {f"d{i}": t for i, t in enumerate(TEXTS)}
    lists = {"q1": ["d1", "d2", "d0", "d3", "d4"], "q2": ["d4", "d0"], "q3": ["d2", "d3"]}
    shared = QueryScores(tei(rerank_server.url))
    nodes = {"base": _Base(lists),
             "base_tei": ServiceRerankNode("base_tei", "base", shared, 3, contents),
             "other_tei": ServiceRerankNode("other_tei", "base", shared, 3, contents)}
    rerank_server.faults["q3 text"] = "500"
    execution = Executor(nodes, ["base", "base_tei", "other_tei"], k=3, chunk_size=8).run(
        QueryBatch(["q1", "q2", "q3"], [QUERY, QUERY + " mars", "q3 text"]))
    first = execution.hits["base_tei"][0]
    assert [d.doc_id for d in first.docs] == expected_order(QUERY, [(d, contents[d]) for d in lists["q1"][:3]])
    assert first.latency_s > execution.hits["base"][0].latency_s
    assert execution.hits["base"][2] is not None and execution.hits["base_tei"][2] is None
    assert "reranker tei: HTTP 500" in execution.failures["base_tei"]["q3"].error
    assert isinstance(execution.failures["other_tei"]["q3"], Failure)
    assert shared.reused == 5 and shared.scored == 5  # other_tei's pairs were base_tei's


def test_a_reranker_typed_in_the_app_is_held_to_the_outbound_policy(rerank_server):
    from searchgrade.core.outbound import ENV_ALLOWED_HOSTS, ENV_SECRETS, OutboundRefused
    from searchgrade.indexes.declared.rerankers import RerankerSpec

    spec = parse_reranker("co", {"kind": "cohere", "url": rerank_server.url, "model": "m",
                                 "api_key": "env:SG_RERANK_KEY", "retries": 0})

    def typed(declared_in: str) -> RerankerSpec:
        return RerankerSpec(spec.name, spec.kind, spec.options, spec.source, declared_in)

    secret = {"SG_RERANK_KEY": "sk-1"}
    with pytest.raises(OutboundRefused, match="url: 127.0.0.1 is a loopback address"):
        HttpReranker(typed("exposed app"), environ=secret)
    with pytest.raises(OutboundRefused, match="api_key: env:SG_RERANK_KEY is not available to declarations typed in the app for 127.0.0.1"):
        HttpReranker(typed("exposed app"), environ={**secret, ENV_ALLOWED_HOSTS: "127.0.0.1"})
    bound = {**secret, ENV_ALLOWED_HOSTS: "127.0.0.1", ENV_SECRETS: "SG_RERANK_KEY=127.0.0.1"}
    assert HttpReranker(typed("exposed app"), environ=bound).rerank(QUERY, TEXTS[:2]) == pytest.approx(
        [known_score(QUERY, t) for t in TEXTS[:2]])
    assert rerank_server.requests[-1]["authorization"] == "Bearer sk-1"
