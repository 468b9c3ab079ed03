"""`searchgrade mcp --http` as a real server process: the SDK's streamable HTTP client with the
bearer token gets the tools; without it every request is refused; a read-only server refuses to
start a run with one line; bound beyond loopback without a token, the server does not start.

The runs are written into the store directly (tests/pages/synthetic.py): no evaluation is needed
to read, compare and gate them.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from searchgrade.engine.store import Store
from tests.browser.server import free_port
from tests.pages.synthetic import random_spec, write_run
from tests.server.mcp.session import API_KEY, SEARCHGRADE, TOKEN, Tools, server_env

pytestmark = pytest.mark.slow


def wait_until_listening(url: str, server: subprocess.Popen, log, timeout_s: float = 60) -> None:
    deadline = time.time() + timeout_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answers (401 without the token)
        except OSError:
            pass
        if server.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"the MCP server did not start: {log.read_text()[-2000:]}")
        time.sleep(0.3)


async def session_over_http(url: str, token: str | None) -> dict:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    seen: dict = {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            streamable_http_client(url, http_client=http) as (read, write, *_), \
            ClientSession(read, write) as session:
        await session.initialize()
        seen["tools"] = {t.name for t in (await session.list_tools()).tools}
        tools = Tools(session)
        listed = await tools.call("list_runs")
        baseline, candidate = (r["run_id"] for r in reversed(listed["runs"]))
        seen["summary"] = await tools.call("run_summary", run_id=candidate)
        seen["compare"] = await tools.call("compare_runs", run_a=baseline, run_b=candidate)
        seen["gate"] = await tools.call("gate", baseline=baseline, candidate=candidate, metric="dcg@10")
        seen["read_only"] = await tools.error("start_evaluation", collection="demo", strategies=["fulltext"])
        seen["read_only_suite"] = await tools.error("start_evaluation", suite="nightly")
        seen["suites"] = (await tools.call("list_runs"))["suites"]
        seen["texts"] = tools.texts
    return seen


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mcp-http")
    store = Store(folder / "data")
    # Two runs of the same 30 queries: the candidate's rankings are worse (another skill per strategy).
    write_run(store, random_spec(30, n_docs=200, seed=1, strategies=("fulltext", "ann"), name="baseline"),
              n_bootstrap=200)
    worse = random_spec(30, n_docs=200, seed=1, strategies=("ann", "fulltext"), name="candidate")
    write_run(store, worse, n_bootstrap=200)
    first = store.list_runs()[-1]
    store.create_suite(name="nightly", collection_name=first.collection_name, collection_path=first.collection_path,
                       source_run_id=first.run_id, mode="qrels", config=first.config,
                       query_ids=[q["query_id"] for q in store.queries(first.run_id)], metric="dcg@10", margin=0.0)
    port = free_port()
    log = folder / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen([*SEARCHGRADE, "mcp", "--http", "--port", str(port), "--data-dir",
                                   str(folder / "data")], env=server_env(SEARCHGRADE_MCP_TOKEN=TOKEN),
                                  stdout=out, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            wait_until_listening(url, server, log)
            yield url, folder / "data"
        finally:
            server.terminate()
            server.wait(15)


@pytest.fixture(scope="module")
def seen(served):
    return asyncio.run(session_over_http(served[0], TOKEN))


def test_with_the_token_the_tools_answer_over_streamable_http(seen, served):
    assert {"run_summary", "compare_runs", "gate", "start_evaluation"} <= seen["tools"]
    assert seen["summary"]["run"]["name"] == "candidate" and seen["summary"]["headline"]["queries"] == 30
    assert {d["strategy"] for d in seen["compare"]["deltas"]} == {"fulltext", "ann"}
    assert seen["gate"]["metric"] == "dcg@10" and seen["gate"]["verdict"] in ("PASS", "FAIL")


def test_the_gate_and_the_comparison_are_the_cli_s_figures(seen, served):
    from searchgrade.engine.gate import run_gate

    store = Store(served[1])
    result = run_gate(store, seen["compare"]["run_a"]["run_id"], seen["compare"]["run_b"]["run_id"], metric="dcg@10")
    assert seen["gate"]["verdict"] == ("FAIL" if result.failed else "PASS")
    by_strategy = {s["strategy"]: s for s in seen["gate"]["strategies"]}
    for line in result.lines:
        assert by_strategy[line.strategy]["change"] == pytest.approx(line.change, abs=1e-4)
        assert by_strategy[line.strategy]["p_value_adjusted"] == pytest.approx(line.p_value, abs=1e-4)
        assert by_strategy[line.strategy]["line"] == result.describe(line)


def test_a_read_only_server_refuses_to_start_a_run_with_one_clear_line(seen):
    assert "read-only" in seen["read_only"] and "--allow-runs" in seen["read_only"]
    assert "\n" not in seen["read_only"]
    assert seen["read_only_suite"] == seen["read_only"]  # a suite's run is refused the same way
    assert [s["suite"] for s in seen["suites"]] == ["nightly"]  # while its settings read as usual


def test_without_the_token_every_request_is_refused(served):
    url, _ = served
    request = urllib.request.Request(url, data=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
                                     headers={"Content-Type": "application/json"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    with pytest.raises(Exception):  # noqa: B017 - the SDK's client fails as it fails on any 401
        asyncio.run(asyncio.wait_for(session_over_http(url, "wrong-token-0123456789"), 30))


def test_no_secret_of_the_servers_environment_is_in_any_result(seen):
    everything = "\n".join(seen["texts"])
    assert API_KEY not in everything and TOKEN not in everything


def test_bound_beyond_loopback_without_a_token_the_server_refuses_to_start(tmp_path):
    done = subprocess.run([*SEARCHGRADE, "mcp", "--http", "--host", "0.0.0.0", "--port", str(free_port()),
                           "--data-dir", str(tmp_path)], env=server_env(), capture_output=True, text=True, check=False,
                          timeout=60)
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1 and "SEARCHGRADE_MCP_TOKEN" in done.stderr, done.stderr
