"""Declared rerankers in a run, end to end: `searchgrade evaluate` with a strategies file naming a
local TEI-shaped and a Cohere-shaped rerank server (tests/indexes/rerank/rerank_server.py), the
real DuckDB file, and `searchgrade resume`."""

from __future__ import annotations

import pytest

from searchgrade.cli import main
from searchgrade.core.records import Document
from searchgrade.engine.run.strategies import label, pairs
from searchgrade.engine.store import Store
from searchgrade.viewmodels.significance import results_pairs
from tests.conftest import TINY_DOCS, TINY_QUERIES
from tests.indexes.rerank.rerank_server import RerankServer, expected_order

CONTENT = {d: Document(d, title, text).content for d, (title, text) in TINY_DOCS.items()}


@pytest.fixture
def server():
    s = RerankServer()
    yield s
    s.stop()


def strategies_file(tmp_path, url: str, extra: str = "") -> str:
    path = tmp_path / "strategies.toml"
    path.write_text(f'[reranker.tei]\nkind = "tei"\nurl = "{url}"\ndepth = 5\nbatch_size = 4\nbackoff_s = 0.01\n\n'
                    f'[reranker.cohere]\nkind = "cohere"\nurl = "{url}"\nmodel = "rerank-test"\n'
                    f'api_key = "env:TEST_COHERE_KEY"\nbackoff_s = 0.01\n{extra}', encoding="utf-8")
    return str(path)


def test_declared_rerankers_give_the_expected_order_fail_only_their_queries_and_resume_finishes(
        tiny_beir, tmp_path, server, monkeypatch, capsys):
    monkeypatch.setenv("TEST_COHERE_KEY", "sk-test")
    data = tmp_path / "d"
    server.faults = {TINY_QUERIES["q3"]: "500", TINY_QUERIES["q4"]: "garbage"}  # not the first query
    code = main(["evaluate", str(tiny_beir), "--qrels", "--strategies", "fulltext", "--rerankers", "tei,cohere",
                 "--strategies-file", strategies_file(tmp_path, server.url), "--data-dir", str(data)])
    err = capsys.readouterr().err
    assert code == 3, err  # complete, with strategies that failed on some queries
    store = Store(data)
    [run] = store.list_runs()
    assert set(run.config["strategies"]) == {"fulltext", "fulltext_tei", "fulltext_cohere"}
    failed = {(f["strategy"], f["query_id"]) for f in store.failed_queries(run.run_id)}
    assert failed == {(s, q) for s in ("fulltext_tei", "fulltext_cohere") for q in ("q3", "q4")}
    errors = {f["error"] for f in store.failed_queries(run.run_id)}
    assert any("reranker tei: HTTP 500" in e and "(after 3 attempts)" in e for e in errors)
    assert any("reranker cohere: the reply from" in e and "is not JSON" in e for e in errors)
    assert "Full-text (BM25) + tei failed on 2 of 5 queries: reranker tei: HTTP 500" in err and "searchgrade resume" in err
    assert "reranker tei on fulltext" in err and "reranker cohere on fulltext" in err  # show says which

    server.faults = {}
    assert main(["resume", run.run_id, "--data-dir", str(data)]) == 0, capsys.readouterr().err
    assert store.failed_queries(run.run_id) == []
    hits = store.stored_hits(run.run_id)
    for qid, query in TINY_QUERIES.items():
        base = [d.doc_id for d in hits[("fulltext", qid)].docs]
        for name in ("fulltext_tei", "fulltext_cohere"):
            reranked = hits[(name, qid)]
            # depth 5 < the run's depth 10: every listed candidate is rescored (max(depth, k), as X_rerank)
            assert [d.doc_id for d in reranked.docs] == expected_order(query, [(d, CONTENT[d]) for d in base]), name
            assert reranked.latency_s > 0
            if qid not in ("q3", "q4"):  # searched once: its latency counts its base's and the reranking
                assert reranked.latency_s > hits[("fulltext", qid)].latency_s
    tei_requests = [r for r in server.requests if r["path"] == "/rerank"]
    assert tei_requests and max(r["n"] for r in tei_requests) <= 4  # batch_size
    assert {r["authorization"] for r in server.requests if r["path"] == "/v2/rerank"} == {"Bearer sk-test"}
    latency = {r["strategy"]: r for r in store.latency_summary(run.run_id)}  # Results' latency table, show's
    assert latency["fulltext_tei"]["n"] == latency["fulltext"]["n"] == len(TINY_QUERIES)
    # X_NAME is paired with X wherever X_rerank is: the bars' and tables' pairs and the paired tests,
    # also in a process that knows the rerankers only from the stored run (the app's Results page).
    from searchgrade.indexes.declared.rerankers import KNOWN_RERANKERS

    KNOWN_RERANKERS.clear()
    [run] = store.list_runs()
    names = run.config["strategies"]
    assert pairs(names) == [("fulltext", "fulltext_cohere"), ("fulltext", "fulltext_tei")]
    assert label("fulltext_tei") == "Full-text (BM25) + tei"
    summary = {r["strategy"] for r in store.metric_summary(run.run_id)}
    assert {"fulltext_tei", "fulltext_cohere"} <= summary
    import pandas as pd

    rows = pd.DataFrame([{"strategy": s, "value": 1.0} for s in names])
    assert {("fulltext_tei", "fulltext"), ("fulltext_cohere", "fulltext")} <= set(results_pairs(rows, "dcg", names))


def test_reranker_model_names_a_declared_reranker_for_x_rerank(tiny_beir, tmp_path, server, monkeypatch, capsys):
    monkeypatch.setenv("TEST_COHERE_KEY", "sk-test")
    data = tmp_path / "d"
    code = main(["evaluate", str(tiny_beir), "--qrels", "--strategies", "fulltext,fulltext_rerank",
                 "--reranker-model", "tei", "--strategies-file", strategies_file(tmp_path, server.url),
                 "--data-dir", str(data)])
    assert code == 0, capsys.readouterr().err
    store = Store(data)
    [run] = store.list_runs()
    assert run.skipped == {}
    hits = store.stored_hits(run.run_id)
    base = [d.doc_id for d in hits[("fulltext", "q2")].docs]
    assert [d.doc_id for d in hits[("fulltext_rerank", "q2")].docs] == expected_order(
        TINY_QUERIES["q2"], [(d, CONTENT[d]) for d in base])
    assert run.stats["declared_rerankers"]["tei"]["calls"] >= len(TINY_QUERIES)


@pytest.mark.parametrize("extra_args, extra_toml, fragment", [
    (["--rerankers", "nope"], "", "--rerankers: reranker 'nope' is not declared: use one of tei, cohere"),
    ([], '[reranker.bad]\nkind = "tei"\n', "[reranker.bad]: missing key 'url'"),
    ([], '[reranker.bad_name]\nkind = "tei"\nurl = "http://x"\n', "reranker name 'bad_name' is not allowed"),
    (["--rerankers", "cohere"], "", "api_key reads $TEST_COHERE_KEY"),
])
def test_a_bad_reranker_stops_evaluate_with_one_line(tiny_beir, tmp_path, server, capsys, monkeypatch,
                                                     extra_args, extra_toml, fragment):
    monkeypatch.delenv("TEST_COHERE_KEY", raising=False)
    code = main(["evaluate", str(tiny_beir), "--qrels", "--strategies", "fulltext", *extra_args,
                 "--strategies-file", strategies_file(tmp_path, server.url, extra_toml),
                 "--data-dir", str(tmp_path / "d")])
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert fragment in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "d" / "searchgrade.duckdb").exists() or Store(tmp_path / "d").list_runs() == []
