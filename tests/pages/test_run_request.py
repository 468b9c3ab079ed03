"""One run request from three surfaces: `searchgrade evaluate`, the Evaluate page and MCP's
start_evaluation build the same RunConfig from the same request, and refuse the same bad request
with the same words (they all go through engine/run/request.py)."""

from __future__ import annotations

import json

import pytest

from searchgrade.cli import build_parser
from searchgrade.cli.evaluate import run_request
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.paths import DEMO_NAME
from searchgrade.engine.run.request import run_config
from searchgrade.server import jobs
from searchgrade.server.mcp import runs
from searchgrade.server.mcp.settings import McpSettings
from tests.pages.conftest import open_page
from tests.pages.test_evaluate import fake_pipeline  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("clean_jobs")


def cli(home, *argv: str):
    """The RunConfig `searchgrade evaluate demo ARGV` would run."""
    args = build_parser().parse_args(["evaluate", DEMO_NAME, *argv, "--data-dir", str(home)])
    return run_config(run_request(args))


def mcp(home, **asked):
    """The RunConfig start_evaluation(collection="demo", ...) would start."""
    settings = McpSettings(data_dir=home, allow_runs=True, strategies_file=asked.pop("strategies_file", None))
    return runs.run_config(settings, asked.pop("mode"), asked.pop("strategies", None), asked.pop("max_queries", None),
                           asked.pop("name", None), asked.pop("k", 10))


def page(calls, **widgets):
    """The RunConfig the Evaluate page starts on the demo with these widgets set (or its one error)."""
    at = open_page("views/evaluate.py")
    for kind, key, value in (("radio", "evaluate_mode", widgets.get("mode")),
                             ("multiselect", "evaluate_strategies", widgets.get("strategies")),
                             ("number_input", "evaluate_k", widgets.get("k")),
                             ("number_input", "evaluate_depth", widgets.get("depth")),
                             ("number_input", "evaluate_sample", widgets.get("sample")),
                             ("text_input", "evaluate_name", widgets.get("name"))):
        if value is not None:
            getattr(at, kind)(key=key).set_value(value).run()
    at.button(key="evaluate_start").click().run()
    assert not at.exception
    if at.error:
        return at.error[0].value.replace("\\", "")
    jobs.wait(jobs.latest_job().job_id, 60)
    return calls[-1]


def same(*configs) -> bool:
    texts = {json.dumps(c.to_json(), sort_keys=True, default=str) for c in configs}
    return len(texts) == 1


def test_the_cli_the_page_and_mcp_build_the_same_run_config_from_the_same_request(home, monkeypatch, fake_pipeline):  # noqa: F811
    release, calls = fake_pipeline
    release.set()
    by_cli = cli(home, "--qrels", "--strategies", "fulltext,hybrid", "--k", "5", "--max-queries", "3", "--name", "same")
    by_mcp = mcp(home, mode="qrels", strategies=["fulltext", "hybrid"], k=5, max_queries=3, name="same")
    # Results kept per query: 10 on the page unless changed, k on the CLI and MCP unless given.
    by_page = page(calls, strategies=["fulltext", "hybrid"], k=5, depth=5, sample=3, name="same")
    assert same(by_cli, by_mcp, by_page)
    assert (by_cli.mode, by_cli.strategies, by_cli.k, by_cli.max_queries) == ("qrels", ("fulltext", "hybrid"), 5, 3)

    # Human grades and the LLM judge's agreement with them, the LLM from the server's environment.
    monkeypatch.setenv("SEARCHGRADE_LLM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    by_cli = cli(home, "--qrels", "--llm", "--strategies", "fulltext", "--max-queries", "4")
    by_mcp = mcp(home, mode="qrels_llm", strategies=["fulltext"], max_queries=4)
    by_page = page(calls, mode="qrels_llm", strategies=["fulltext"], sample=4)
    assert same(by_cli, by_mcp, by_page)
    assert (by_page.mode, by_page.llm.model, by_page.judge_unjudged) == ("qrels", "env-model", False)


def test_the_cli_the_page_and_mcp_refuse_the_same_bad_request_with_the_same_words(home, monkeypatch, fake_pipeline,  # noqa: F811
                                                                                   tmp_path_factory):
    _, calls = fake_pipeline
    # A declared strategy whose secret the server's environment does not have (its file outside the
    # data folder, which the page never names).
    monkeypatch.delenv("SG_SAME_SECRET", raising=False)
    path = tmp_path_factory.mktemp("operator") / "strategies.toml"
    path.write_text('[strategy.locked]\nkind = "http"\nurl = "http://127.0.0.1:9/search?q={{query}}"\n'
                    'hits = "hits"\nid = "id"\nheaders = { Authorization = "env:SG_SAME_SECRET" }\n', encoding="utf-8")
    monkeypatch.setenv("SEARCHGRADE_STRATEGIES_FILE", str(path))
    words = []
    for build in (lambda: cli(home, "--qrels", "--strategies", "locked"),
                  lambda: mcp(home, mode="qrels", strategies=["locked"], strategies_file=str(path))):
        with pytest.raises(SearchGradeError) as raised:
            build()
        words.append(str(raised.value))
    words.append(page(calls, strategies=["locked"]))
    assert len(set(words)) == 1 and "SG_SAME_SECRET" in words[0], words
    assert calls == []  # nothing started

    # What the page's widgets cannot ask for, the CLI and MCP refuse alike.
    for argv, asked in ((["--k", "0"], {"k": 0}), (["--strategies", "nope"], {"strategies": ["nope"]}),
                        (["--max-queries", "0"], {"max_queries": 0})):
        refused = []
        for build in (lambda: cli(home, "--qrels", *argv), lambda: mcp(home, mode="qrels", **asked)):
            with pytest.raises(SearchGradeError) as raised:
                build()
            refused.append(str(raised.value))
        assert refused[0] == refused[1], refused
