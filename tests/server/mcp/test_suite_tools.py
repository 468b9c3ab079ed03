"""Suites in the MCP tools, in process: two runs of a suite written into the store (the second's
ann worse, its fulltext better), the suite's entries as engine/suites/suite_run.py stores them (the
verdict by engine/suites/regression.py itself), then what list_runs, run_summary, compare_runs and
gate say of them; and the refusals of a suite's start (read-only, above --max-queries, extra
arguments). The real run of a suite through MCP is in test_stdio_session.py."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.gate import run_gate
from searchgrade.engine.store import Store
from searchgrade.engine.suites.regression import compare_runs as regression
from searchgrade.server.mcp import reads, runs
from searchgrade.server.mcp.payload import to_json
from searchgrade.server.mcp.settings import McpSettings
from tests.pages.synthetic import random_spec, write_run


@pytest.fixture(scope="module")
def suite_store(tmp_path_factory):
    """A store with suite "nightly": its source run and a second run where ann dropped and fulltext gained."""
    store = Store(tmp_path_factory.mktemp("mcp-suite"))
    before = write_run(store, random_spec(80, n_docs=200, seed=1, strategies=("fulltext", "ann"), name="before"),
                       n_bootstrap=200)
    after = write_run(store, random_spec(80, n_docs=200, seed=1, strategies=("ann", "fulltext"), name="after"),
                      n_bootstrap=200)
    other = write_run(store, random_spec(20, n_docs=200, seed=2, strategies=("fulltext",), name="no suite"),
                      n_bootstrap=100)
    run = store.get_run(before)
    store.create_suite(name="nightly", collection_name=run.collection_name, collection_path=run.collection_path,
                       source_run_id=before, mode="qrels", config=run.config,
                       query_ids=[q["query_id"] for q in store.queries(before)], metric="dcg@10", margin=0.0)
    source = store.start_suite_entry("nightly", "source")
    store.update_suite_entry(source, run_id=before, status="source", changes=[], verdict=[])
    changes = regression(store, before, after, "dcg@10", 0.0)
    entry = store.start_suite_entry("nightly", "mcp")
    store.update_suite_entry(entry, run_id=after, status="compared", baseline_run_id=before,
                             changes=["index.rerank_depth: 50 -> 100"], verdict=[c.to_json() for c in changes],
                             note="synonyms v3 deployed")
    return store, before, after, other, changes


def test_list_runs_lists_the_suite_with_its_last_run_and_verdict(suite_store):
    store, before, after, other, _ = suite_store
    listed = reads.list_runs(store)
    (suite,) = listed["suites"]
    assert suite["suite"] == "nightly" and suite["queries"] == 80 and suite["runs"] == 2
    assert suite["schedule"] == "not scheduled" and suite["next_due_utc"] is None
    assert suite["last_run"]["run_id"] == after and suite["last_run"]["trigger"] == "mcp"
    assert suite["last_verdict"]["verdict"] == "drop" and suite["last_verdict"]["baseline_run_id"] == before
    assert {s["strategy"]: s["verdict"] for s in suite["last_verdict"]["strategies"]} == {"ann": "drop",
                                                                                         "fulltext": "gain"}
    suites_of = {r["run_id"]: r["suite"] for r in listed["runs"]}
    assert suites_of == {before: "nightly", after: "nightly", other: None}
    assert [r["run_id"] for r in reads.list_runs(store, suite="nightly")["runs"]] == [after, before]
    with pytest.raises(SearchGradeError, match="no suite named 'nope'"):
        reads.list_runs(store, suite="nope")


def test_a_suite_runs_summary_carries_the_stored_regression_verdict(suite_store):
    store, before, after, _, changes = suite_store
    summary = reads.run_summary(store, after)
    verdict = summary["suite"]
    assert summary["run"]["suite"] == "nightly"
    assert verdict["verdict"] == "drop" and verdict["baseline_run_id"] == before and verdict["status"] == "compared"
    by = {s["strategy"]: s for s in verdict["strategies"]}
    for c in changes:
        assert by[c.strategy]["verdict"] == c.verdict and by[c.strategy]["line"] == c.line()
        assert by[c.strategy]["change"] == pytest.approx(c.change) and by[c.strategy]["ci_low"] == pytest.approx(c.ci_low)
    assert by["ann"]["dropped_most"][0]["query"]["untrusted_query_text"]
    assert verdict["config_changes"] == ["index.rerank_depth: 50 -> 100"]
    assert verdict["note"] == "synonyms v3 deployed"  # a person's note, as a run's name: plain
    assert reads.run_summary(store, before)["suite"]["verdict"] == "the run the suite was made from"
    assert "suite" not in reads.run_summary(store, suite_store[3])
    assert len(to_json(summary).encode()) < 20_000


def test_a_suite_run_alone_is_compared_and_gated_against_the_suites_previous_run(suite_store):
    store, before, after, _, changes = suite_store
    compared = reads.compare_runs(store, after)
    assert compared["run_a"]["run_id"] == before and compared["run_b"]["run_id"] == after
    assert compared["metric"] == "DCG@10" and "previous complete run" in compared["baseline"]
    assert compared == reads.compare_runs(store, before, after, "dcg@10") | {"baseline": compared["baseline"]}
    gated = reads.gate(store, None, after)
    expected = run_gate(store, before, after, metric="dcg@10", margin=0.0)
    assert gated["baseline"] == before and gated["suite"] == "nightly" and gated["margin"] == 0.0
    assert gated["verdict"] == "FAIL" == ("FAIL" if expected.failed else "PASS")  # ann dropped beyond margin 0
    ann = next(s for s in gated["strategies"] if s["strategy"] == "ann")
    drop = next(c for c in changes if c.strategy == "ann")
    assert ann["failed"] is True and ann["change"] == pytest.approx(drop.change, abs=1e-9)
    assert reads.gate(store, None, after, metric="ndcg@10", margin=0.5)["margin"] == 0.5  # given: the agent's


@pytest.mark.parametrize(("index", "message"), [
    (1, "first complete run of suite nightly"),  # the run the suite was made from
    (3, "is no run of a suite"),
])
def test_a_run_alone_without_a_previous_suite_run_is_one_line_saying_what_to_give(suite_store, index, message):
    store, run_id = suite_store[0], suite_store[index]
    with pytest.raises(SearchGradeError, match=message) as refused:
        reads.compare_runs(store, run_id)
    assert "give run_b" in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(SearchGradeError, match="give baseline"):
        reads.gate(store, None, run_id)


def test_a_suite_start_is_refused_read_only_above_the_query_bound_and_with_a_collections_arguments(suite_store):
    store = suite_store[0]
    with pytest.raises(runs.RefusedError, match="read-only"):
        runs.start_evaluation(McpSettings(data_dir=store.data_dir), store, None, suite="nightly")
    allowed = McpSettings(data_dir=store.data_dir, allow_runs=True, max_queries=50)
    with pytest.raises(runs.RefusedError, match="80 frozen queries, above this server's --max-queries of 50"):
        runs.start_evaluation(allowed, store, None, suite="nightly")
    with pytest.raises(SearchGradeError, match="give suite without max_queries, strategies"):
        runs.start_evaluation(allowed, store, None, suite="nightly", strategies=["ann"], max_queries=3)
    with pytest.raises(SearchGradeError, match="no suite named 'nope'"):
        runs.start_evaluation(allowed, store, None, suite="nope")
    with pytest.raises(SearchGradeError, match="give collection"):
        runs.start_evaluation(allowed, store, None)


def llm_judged_suite(store: Store, settings: McpSettings) -> str:
    """Suite "judged" over 4 demo queries whose runs the LLM judge grades too (mode qrels_llm): the
    configuration start_evaluation itself makes for such a run, as a suite made from it stores it."""
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.paths import DEMO_DIR, DEMO_NAME

    config = runs.run_config(settings, "qrels_llm", ["fulltext"], 4, None, 10).to_json()
    config["max_queries"] = None
    queries = [q.query_id for q in load_collection(DEMO_DIR).queries[:4]]
    store.create_suite(name="judged", collection_name=DEMO_NAME, collection_path=str(DEMO_DIR), source_run_id="-",
                       mode="qrels", config=config, query_ids=queries, metric="dcg@10", margin=0.0)
    return "judged"


def test_an_llm_suites_run_is_estimated_first_and_refused_above_the_ceiling(tmp_path, monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_LLM_MODEL", "m")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nobody listens: the estimate asks nothing else
    store = Store(tmp_path)
    name = llm_judged_suite(store, McpSettings(data_dir=tmp_path))
    estimate = runs.estimate_cost(McpSettings(data_dir=tmp_path), store, None, suite=name)
    assert estimate["suite"] == name and estimate["judge"]["calls"] > 0 and estimate["tokens"] > 0
    assert estimate["within_ceiling"] is False and estimate["max_tokens"] == 0
    with pytest.raises(runs.RefusedError, match="above this server's ceiling of 0") as refused:
        runs.start_evaluation(McpSettings(data_dir=tmp_path, allow_runs=True), store, None, suite=name)
    assert "\n" not in str(refused.value)
    roomy = McpSettings(data_dir=tmp_path, allow_runs=True, max_tokens=10**9)
    first = runs.start_evaluation(roomy, store, None, suite=name)
    assert first["started"] is False and first["estimate"]["tokens"] == estimate["tokens"]
    assert "accept_estimate=true" in first["next"]
    assert store.list_runs() == [] and store.suite_entries(name) == []  # nothing ran, nothing was recorded


def test_a_suite_whose_collection_is_gone_is_recorded_could_not_evaluate_as_suite_run_records_it(tmp_path):
    from searchgrade.server.mcp.suites import suite_job

    store = Store(tmp_path / "data")
    store.create_suite(name="gone", collection_name="gone", collection_path=str(tmp_path / "gone"), source_run_id="-",
                       mode="qrels", config={"k": 10, "mode": "qrels", "strategies": ["fulltext"]},
                       query_ids=["q1"], metric="dcg@10", margin=0.0)
    load, run = suite_job(store, "gone", note="after the move")
    with pytest.raises(SearchGradeError, match="suite gone could not evaluate"):
        run(load(), None, store, tmp_path / "data")
    (entry,) = store.suite_entries("gone")
    assert entry["status"] == "could not evaluate" and entry["trigger"] == "mcp" and entry["note"] == "after the move"
    assert store.get_suite("gone").outage is True  # its "could not evaluate" alert is due (no channel set here)
