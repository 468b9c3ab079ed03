"""The tools' bounds in process: a 10,000-query run's summary stays small, a started run stays
within the operator's limits, collections outside them are refused, secrets never leave."""

from __future__ import annotations

import time
from itertools import repeat

import numpy as np
import pytest

from searchgrade.core.records import Query, SearchGradeError
from searchgrade.engine.run.strategies import known_strategies
from searchgrade.engine.store import Store
from searchgrade.server.mcp import reads, runs
from searchgrade.server.mcp.http import required_token
from searchgrade.server.mcp.payload import REDACTED, scrub, to_json
from searchgrade.server.mcp.settings import ENV_TOKEN, McpSettings
from tests.pages.synthetic import random_spec, write_run

#: What the synthetic run stores per query: the summary's metrics and those beside judged@k.
BIG_METRICS = ("dcg", "ndcg", "precision", "recall", "mrr", "map", "mean_relevance", "judged", "ndcg_judged",
               "bpref", "rbp", "rbp_residual")

PER_QUERY = ("dcg", "ndcg")


def write_big_run(store: Store, n_queries: int) -> str:
    """A complete run of the six built-in strategies over ``n_queries`` queries, written directly
    into the store: random values at k = 10 and their means with normal 95% intervals. Per-query rows
    are written for DCG and NDCG only (the summary's paired tests read DCG's; 120,000 rows instead
    of 720,000 keep the test short), the means for every metric the summary shows."""
    rng = np.random.default_rng(0)
    run_id = store.create_run(name="ten thousand", collection_name="big", collection_path="/tmp/big", mode="qrels",
                              label_source="human", grade_min=0, grade_max=3, threshold=2, k=10, depth=10,
                              config={"k": 10, "mode": "qrels"})
    queries = [Query(f"q{i}", f"query number {i}", "natural", None) for i in range(n_queries)]
    ids = [q.query_id for q in queries]
    rows, summary = [], []
    for strategy in known_strategies():
        for metric in BIG_METRICS:
            values = rng.random(n_queries) * (13.6 if metric == "dcg" else 1.0)
            if metric in PER_QUERY:
                rows += zip(repeat(strategy), ids, repeat(metric), repeat(10), values.tolist())
            half = 1.96 * values.std() / n_queries**0.5
            mean = float(values.mean())
            summary.append((strategy, metric, 10, mean, mean - half, mean + half, n_queries))
    with store.transaction() as con:
        store.write_queries(con, run_id, queries)
        store.write_metric_values(con, run_id, rows)
        store.write_metric_summary(con, run_id, summary)
    store.update_run(run_id, stats={"queries": n_queries})
    store.finish_run(run_id, "complete")
    return run_id


@pytest.mark.slow
def test_a_10000_query_runs_summary_is_under_20_kb(tmp_path):
    store = Store(tmp_path)
    run_id = write_big_run(store, 10_000)
    started = time.perf_counter()
    text = to_json(reads.run_summary(store, run_id))
    elapsed = time.perf_counter() - started
    summary = reads.run_summary(store, run_id)
    assert summary["headline"]["queries"] == 10_000 and len(summary["strategies"]) == 6
    assert len(text.encode()) < 20_000, len(text.encode())
    print(f"summary of a 10,000-query run: {len(text.encode()):,} bytes in {elapsed:.2f} s")


def test_lists_are_cut_and_say_how_much_was_left_out(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, random_spec(80, n_docs=300, seed=3, strategies=("fulltext", "ann")), n_bootstrap=100)
    failed = reads.failed_queries(store, run_id, limit=500)
    assert len(failed["failed"]) == reads.MAX_ROWS and failed["failed_left_out"] == failed["failed_total"] - reads.MAX_ROWS
    assert len(to_json(failed).encode()) < 40_000


def settings(tmp_path, **overrides) -> McpSettings:
    return McpSettings(data_dir=tmp_path, **overrides)


def test_a_started_run_samples_at_most_the_operators_max_queries(tmp_path):
    config = runs.run_config(settings(tmp_path, max_queries=7), "qrels", ["fulltext"], 500, None, 10)
    assert config.max_queries == 7
    assert runs.run_config(settings(tmp_path, max_queries=7), "qrels", ["fulltext"], 3, None, 10).max_queries == 3


def test_an_llm_run_generates_at_most_max_queries(tmp_path, monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_LLM_MODEL", "m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    config = runs.run_config(settings(tmp_path, max_queries=10), "llm", ["fulltext"], None, None, 10)
    qg = config.querygen
    assert qg.n_docs * (qg.n_natural + qg.n_keyword) <= 10


def test_read_only_refuses_before_anything_is_read(tmp_path):
    with pytest.raises(runs.RefusedError, match="read-only.*--allow-runs"):
        runs.start_evaluation(settings(tmp_path), Store(tmp_path), "demo")


def test_an_llm_run_within_the_ceiling_returns_its_estimate_and_does_not_start(tmp_path, monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_LLM_MODEL", "m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nobody listens: the estimate asks nothing else
    out = runs.start_evaluation(settings(tmp_path, allow_runs=True, max_tokens=10**9), Store(tmp_path), "demo",
                                mode="llm", strategies=["fulltext"], max_queries=3)
    assert out["started"] is False and "accept_estimate=true" in out["next"]
    assert out["estimate"]["tokens"] > 0 and Store(tmp_path).list_runs() == []


@pytest.mark.parametrize("collection", ["/etc", "../..", "", "nothing-like-it"])
def test_only_the_demo_stored_collections_and_the_root_may_be_evaluated(tmp_path, collection):
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(SearchGradeError, match="not one this server may read"):
        runs.resolve_collection(settings(tmp_path, collections_root=root), Store(tmp_path / "data"), collection)


def test_a_folder_inside_the_collections_root_may_be_evaluated(tmp_path):
    (tmp_path / "root" / "mine").mkdir(parents=True)
    target = runs.resolve_collection(settings(tmp_path, collections_root=tmp_path / "root"), Store(tmp_path / "d"), "mine")
    assert target.path == (tmp_path / "root" / "mine").resolve()


def test_secret_values_of_the_environment_are_redacted_wherever_they_appear(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "abcdefgh12345678")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to be told from ordinary text: left alone
    text = to_json({"error": "GET https://x/?key=abcdefgh12345678 failed", "note": "abc"})
    assert "abcdefgh12345678" not in text and REDACTED in text and '"note":"abc"' in text
    assert scrub("nothing secret") == "nothing secret"


def test_a_run_without_metrics_yet_says_so_instead_of_failing(tmp_path):
    store = Store(tmp_path)
    run_id = store.create_run(name="just started", collection_name="c", collection_path="/tmp/c", mode="qrels",
                              label_source="human", grade_min=0, grade_max=3, threshold=2, k=10, depth=10,
                              config={"k": 10, "mode": "qrels"})
    summary = reads.run_summary(store, run_id)
    assert summary["run"]["status"] == "running" and "no metrics yet" in summary["note"]
    assert "headline" not in summary


@pytest.mark.parametrize(("host", "environ", "expected"), [
    ("127.0.0.1", {}, None),
    ("localhost", {}, None),
    ("127.0.0.1", {ENV_TOKEN: "t" * 16}, "t" * 16),  # set: required on loopback too
    ("0.0.0.0", {ENV_TOKEN: "t" * 16}, "t" * 16),
])
def test_the_token_http_requires(host, environ, expected):
    assert required_token(host, environ) == expected


@pytest.mark.parametrize(("host", "environ", "message"), [
    ("0.0.0.0", {}, "reachable from other machines: set SEARCHGRADE_MCP_TOKEN"),
    ("192.168.1.20", {ENV_TOKEN: "  "}, "reachable from other machines"),
    ("0.0.0.0", {ENV_TOKEN: "short"}, "at least 16"),
])
def test_beyond_loopback_without_a_good_token_the_server_does_not_start(host, environ, message):
    with pytest.raises(SearchGradeError, match=message):
        required_token(host, environ)
