"""A real MCP session over stdio with the SDK's own client: `searchgrade mcp --allow-runs` started
as an agent starts it, two evaluations of the demo started and followed to the end, their summary,
comparison and gate, a query's results, the resources, and the token ceiling of an LLM run."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time

import pytest

from searchgrade.engine.export import export_metrics
from searchgrade.engine.store import Store
from searchgrade.engine.suites.definition import suite_from_run
from tests.server.mcp.session import API_KEY, SEARCHGRADE, TOKEN, Tools, server_env

TOOLS = {"list_runs", "run_summary", "compare_runs", "query_results", "failed_queries", "start_evaluation",
         "run_progress", "gate", "estimate_cost"}

pytestmark = pytest.mark.slow


async def session_over_stdio(data_dir, errlog) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=SEARCHGRADE[0], env=server_env(SEARCHGRADE_MCP_TOKEN=TOKEN),
        args=[*SEARCHGRADE[1:], "mcp", "--allow-runs", "--max-queries", "4", "--data-dir", str(data_dir)])
    seen: dict = {}
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        seen["init"] = await session.initialize()
        seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
        tools = Tools(session)
        seen["empty"] = await tools.call("list_runs")
        runs = []
        for name in ("first", "second"):
            started = await tools.call("start_evaluation", collection="demo", strategies=["fulltext"],
                                       max_queries=40, name=name)
            seen.setdefault("started", []).append(started)
            seen.setdefault("progress", []).append(await tools.until_done(started["run_id"]))
            runs.append(started["run_id"])
        seen["summary"] = await tools.call("run_summary", run_id=runs[0])
        seen["compare"] = await tools.call("compare_runs", run_a=runs[0], run_b=runs[1], metric="ndcg@10")
        seen["gate"] = await tools.call("gate", baseline=runs[0], candidate=runs[1])
        seen["failed"] = await tools.call("failed_queries", run_id=runs[0])
        seen["listed"] = await tools.call("list_runs")
        seen["unknown_run"] = await tools.error("run_summary", run_id="no-such-run")
        seen["llm_refused"] = await tools.error("start_evaluation", collection="demo", mode="llm",
                                                strategies=["fulltext"], max_queries=3)
        seen["outside"] = await tools.error("start_evaluation", collection="/etc", strategies=["fulltext"])
        seen["estimate"] = await tools.call("estimate_cost", collection="demo", mode="llm",
                                            strategies=["fulltext"], max_queries=3)
        seen["runs"] = runs
        uri = f"searchgrade://runs/{runs[0]}"
        seen["summary_resource"] = (await session.read_resource(f"{uri}/summary")).contents[0].text
        seen["csv_resource"] = (await session.read_resource(f"{uri}/metrics.csv")).contents[0].text
        query_id = next(csv.DictReader(io.StringIO(seen["csv_resource"])))["query_id"]
        seen["query"] = await tools.call("query_results", run_id=runs[0], query_id=query_id, limit=3)
        seen["templates"] = {t.uri_template for t in (await session.list_resource_templates()).resource_templates}
        # A suite made from the first run (as `searchgrade suite create` makes it), run by the agent.
        suite_from_run(Store(data_dir), "demo-nightly", runs[0])
        seen["suite_started"] = await tools.call("start_evaluation", suite="demo-nightly", note="agent's run")
        seen["suite_progress"] = await tools.until_done(seen["suite_started"]["run_id"])
        suite_run = seen["suite_started"]["run_id"]
        seen["suite_summary"] = await tools.call("run_summary", run_id=suite_run)
        seen["suite_compare"] = await tools.call("compare_runs", run_a=suite_run)
        seen["suite_gate"] = await tools.call("gate", candidate=suite_run)
        seen["suite_listed"] = await tools.call("list_runs", suite="demo-nightly")
        seen["suite_extra"] = await tools.error("start_evaluation", suite="demo-nightly", strategies=["ann"])
        # One run at a time: a run running in the store (as `searchgrade evaluate` elsewhere would
        # leave it) refuses both starts. (A run the server started finishes too soon to be raced.)
        store = Store(data_dir)
        seen["busy"] = store.create_run(name="elsewhere", collection_name="demo", collection_path="/tmp/none",
                                        mode="qrels", label_source="human", grade_min=0, grade_max=3, threshold=2,
                                        k=10, depth=10, config={"k": 10, "mode": "qrels"})
        seen["second_at_once"] = await tools.error("start_evaluation", collection="demo", strategies=["fulltext"])
        seen["suite_at_once"] = await tools.error("start_evaluation", suite="demo-nightly")
        store.finish_run(seen["busy"], "cancelled")
        seen["texts"] = tools.texts
        # A run started just before the agent closes the session goes on without it.
        seen["left_running"] = (await tools.call("start_evaluation", collection="demo", strategies=["fulltext"],
                                                 max_queries=2, name="left running"))["run_id"]
    return seen


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mcp-stdio")
    with open(folder / "server.log", "w") as errlog:
        result = asyncio.run(session_over_stdio(folder / "data", errlog))
    result["data_dir"] = folder / "data"
    result["log"] = (folder / "server.log").read_text()
    return result


def test_initialize_names_the_server_and_lists_every_tool_with_its_docstring(seen):
    assert seen["init"].server_info.name == "searchgrade"
    assert "untrusted_document_text" in seen["init"].instructions
    assert TOOLS <= set(seen["tools"])
    assert "adjusted" in seen["tools"]["compare_runs"].description
    assert seen["tools"]["run_summary"].annotations.read_only_hint is True
    assert seen["tools"]["start_evaluation"].annotations.read_only_hint is False


def test_an_evaluation_started_by_the_agent_runs_to_complete_within_the_query_bound(seen):
    assert seen["empty"]["runs"] == []
    for started, progress in zip(seen["started"], seen["progress"], strict=True):
        assert started["started"] is True and started["queries_at_most"] == 4  # 40 asked, --max-queries 4
        assert progress["status"] == "complete" and progress["done"] is True, progress
        assert progress["queries"] == 4
        assert {s["stage"] for s in progress["job"]["stages"]} >= {"load collection"}
    assert [r["run_id"] for r in seen["listed"]["runs"]] == seen["runs"][::-1]  # newest first


def test_the_summary_gives_the_stored_figures_with_their_intervals(seen):
    summary = seen["summary"]
    stored = {(r["strategy"], r["metric"]): r for r in Store(seen["data_dir"]).metric_summary(seen["runs"][0], 10)}
    fulltext = summary["strategies"][0]
    assert fulltext["strategy"] == "fulltext" and fulltext["queries"] == 4
    assert fulltext["ndcg@10"]["value"] == pytest.approx(stored[("fulltext", "ndcg")]["value"], abs=1e-4)
    assert fulltext["ndcg@10"]["ci_low"] == pytest.approx(stored[("fulltext", "ndcg")]["ci_low"], abs=1e-4)
    assert summary["headline"]["strategy"] == "fulltext" and summary["headline"]["queries"] == 4
    assert summary["judged"]["strategies"]["fulltext"]["judged"] == pytest.approx(
        stored[("fulltext", "judged")]["value"], abs=1e-4)
    assert set(summary["failures"]["top1_not_relevant"]) == {"fulltext"}
    assert json.loads(seen["summary_resource"]) == summary


def test_two_runs_of_the_same_sample_compare_and_pass_the_gate(seen):
    compare = seen["compare"]
    assert compare["shared_queries"] == 4
    (delta,) = compare["deltas"]
    assert delta["strategy"] == "fulltext" and delta["change"] == 0 and delta["verdict"] == "not distinguishable"
    assert compare["changed_most"] == []
    gate = seen["gate"]
    assert gate["verdict"] == "PASS" and gate["exit_code"] == 0 and gate["metric"] == "ndcg@10"
    assert gate["strategies"][0]["line"].startswith("PASS  fulltext")


def test_a_suite_started_by_the_agent_is_its_next_run_compared_with_the_previous_one(seen):
    first = seen["runs"][0]
    started, progress = seen["suite_started"], seen["suite_progress"]
    assert started["started"] is True and started["suite"] == "demo-nightly" and started["queries"] == 4
    assert progress["status"] == "complete" and progress["done"] is True, progress
    assert progress["suite"] == {"suite": "demo-nightly", "status": "compared", "verdict": "no significant change",
                                 "baseline_run_id": first, "error": None}
    store = Store(seen["data_dir"])
    (entry,) = [e for e in store.suite_entries("demo-nightly") if e["run_id"] == started["run_id"]]
    assert entry["trigger"] == "mcp" and entry["note"] == "agent's run" and entry["baseline_run_id"] == first
    assert {q["query_id"] for q in store.queries(started["run_id"])} == set(store.get_suite("demo-nightly").query_ids)
    summary = seen["suite_summary"]
    assert summary["run"]["suite"] == "demo-nightly" and summary["suite"]["baseline_run_id"] == first
    (fulltext,) = summary["suite"]["strategies"]
    (stored,) = entry["verdict"]
    assert fulltext["change"] == pytest.approx(stored["change"]) == 0 and fulltext["verdict"] is None
    assert "no 95% CI from 4 queries" in fulltext["line"]  # too few for a verdict, said as such
    assert seen["suite_compare"]["run_a"]["run_id"] == first and seen["suite_compare"]["run_b"]["run_id"] == started["run_id"]
    assert seen["suite_compare"]["deltas"][0]["change"] == 0
    assert seen["suite_gate"]["baseline"] == first and seen["suite_gate"]["suite"] == "demo-nightly"
    assert seen["suite_gate"]["metric"] == "dcg@10" and seen["suite_gate"]["verdict"] == "PASS"
    listed = seen["suite_listed"]
    assert [r["run_id"] for r in listed["runs"]] == [started["run_id"], first]
    (suite,) = listed["suites"]
    assert suite["last_run"]["run_id"] == started["run_id"] and suite["last_verdict"]["verdict"] == "no significant change"
    assert "give suite without strategies" in seen["suite_extra"]


def test_corpus_text_comes_back_marked_as_untrusted_data(seen):
    query = seen["query"]
    assert set(query["query"]) == {"untrusted_query_text", "truncated"}
    results = query["strategies"]["fulltext"]["results"]
    assert len(results) == 3 and results[0]["rank"] == 1
    assert set(results[0]["title"]) == {"untrusted_document_text", "truncated"}
    assert "untrusted_document_text" in results[0]["snippet"]
    assert results[0]["judgment"] in ("human label", "unjudged (counts as 0)")  # the grade's source
    # The relevant documents with each strategy's rank, a number (None: not retrieved).
    for doc in query["relevant_documents"]:
        assert set(doc["rank_by_strategy"]) == set(query["strategies"])
        assert all(rank is None or isinstance(rank, int) for rank in doc["rank_by_strategy"].values())
    for row in seen["failed"]["failed"]:
        assert all("untrusted_document_text" in cell for cell in row["top1"].values())


def test_an_llm_run_is_estimated_and_refused_above_the_token_ceiling(seen):
    estimate = seen["estimate"]
    assert estimate["tokens"] > 0 and estimate["max_tokens"] == 0 and estimate["within_ceiling"] is False
    assert estimate["judge"]["calls"] > 0
    refused = seen["llm_refused"]
    assert "refused" in refused and "--max-tokens" in refused and "\n" not in refused


def test_bad_requests_get_one_line_saying_what_to_do(seen):
    assert "no run 'no-such-run'" in seen["unknown_run"] and "\n" not in seen["unknown_run"]
    # The data folder by name, never its path on the server.
    assert "in the data folder/searchgrade.duckdb" in seen["unknown_run"], seen["unknown_run"]
    assert str(seen["data_dir"]) not in seen["unknown_run"] and "/tmp" not in seen["unknown_run"]
    assert "not one this server may read" in seen["outside"]


def test_the_csv_resource_is_what_searchgrade_export_writes(seen, tmp_path):
    path = export_metrics(Store(seen["data_dir"]), seen["runs"][0], "csv", tmp_path)
    assert seen["csv_resource"] == path.read_text(encoding="utf-8")
    assert next(csv.reader(io.StringIO(seen["csv_resource"])))[0] == "run_id"
    assert {"searchgrade://runs/{run_id}/summary", "searchgrade://runs/{run_id}/metrics.csv"} <= seen["templates"]


def test_one_run_at_a_time(seen):
    assert f"run {seen['busy']} is still running" in seen["second_at_once"]
    assert f"run {seen['busy']} is still running" in seen["suite_at_once"]


def test_a_run_goes_on_after_the_session_that_started_it_ended(seen):
    store = Store(seen["data_dir"])
    deadline = time.monotonic() + 300
    while (run := store.get_run(seen["left_running"])).status == "running" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert run.status == "complete" and run.stats["queries"] == 2, (run.status, run.error)


def test_no_secret_of_the_servers_environment_is_in_any_result(seen):
    everything = "\n".join(seen["texts"] + [seen["summary_resource"], seen["csv_resource"]])
    assert API_KEY not in everything and TOKEN not in everything
