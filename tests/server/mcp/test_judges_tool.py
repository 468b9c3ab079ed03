"""The MCP tool `judges`: the same report as `searchgrade judges RUN --format json` and the Results
section, called through the server the agent talks to (in process), read-only."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from searchgrade.engine.store import Store
from searchgrade.server.mcp.server import build_server
from searchgrade.server.mcp.settings import McpSettings
from tests.engine.judges.fixtures import write_simulated_run
from tests.server.mcp.session import SEARCHGRADE, server_env


@pytest.mark.slow
def test_the_judges_tool_gives_the_clis_json_and_the_findings_in_words(tmp_path):
    data = tmp_path / "data"
    run_id, _ = write_simulated_run(Store(data), tmp_path / "sim", ["faithful", "lenient"], n_queries=24)
    server = build_server(McpSettings(data_dir=data))

    async def call() -> tuple[dict, object]:
        tools = {t.name: t for t in await server.list_tools()}
        result = await server.call_tool("judges", {"run_id": run_id[:12]})
        return json.loads(result.content[0].text), tools["judges"]

    answer, tool = asyncio.run(call())
    assert tool.annotations.read_only_hint is True
    cli = subprocess.run([*SEARCHGRADE, "judges", run_id, "--format", "json", "--data-dir", str(data)],
                         capture_output=True, text=True, env=server_env(), check=True)
    document = json.loads(cli.stdout)
    assert [j["model"] for j in answer["judges"]] == [j["model"] for j in document["judges"]] == [
        "faithful", "lenient", "panel"]
    for mine, theirs in zip(answer["judges"], document["judges"], strict=True):
        assert mine["decision_agreement"] == pytest.approx(theirs["decision_agreement"], abs=1e-4)
        assert mine["kappa_w"] == pytest.approx(theirs["kappa_w"], abs=1e-4)
        assert mine["recommended"] == theirs["recommended"]
    assert answer["decisions"][0].startswith("The panel picks the same winner as people in 6 of 6")
    assert answer["queries"] == 24 and answer["metric"] == "DCG@5"
    assert any("grades higher than people" in s for s in answer["item_agreement"])


def test_an_agent_may_ask_for_a_panel_of_models_on_the_servers_endpoint_only(tmp_path, monkeypatch):
    from searchgrade.core.records import SearchGradeError
    from searchgrade.server.mcp import runs

    monkeypatch.setenv("SEARCHGRADE_LLM_MODEL", "test-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    settings = McpSettings(data_dir=tmp_path)
    config = runs.run_config(settings, "qrels_llm", ["fulltext"], 4, None, 10, ["a", "b"])
    assert config.judges == ("a", "b") and config.llm.base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(SearchGradeError, match="models on the server's endpoint only"):
        runs.run_config(settings, "qrels_llm", ["fulltext"], 4, None, 10, ["a", "b@http://10.0.0.1:80/v1"])
