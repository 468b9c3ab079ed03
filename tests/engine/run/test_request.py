"""The run request: the one place a run's options are checked and turned into its RunConfig
(engine/run/request.py); the surfaces that make requests are in tests/pages/test_run_request.py."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.llm.judge import JudgeSettings
from searchgrade.engine.run.request import RunRequest, run_config
from searchgrade.indexes.settings import IndexSettings


@pytest.fixture
def llm_env(monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_LLM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.mark.parametrize(("request_", "words"), [
    (RunRequest(), "say how to grade: --qrels"),
    (RunRequest(qrels=True, model="m"), "--model goes with --llm"),
    (RunRequest(qrels=True, judge=JudgeSettings()), "--judge-prompt goes with --llm"),
    (RunRequest(qrels=True, judge_unjudged=True), "--judge-unjudged goes with --llm"),
    (RunRequest(qrels=True, llm=True, docs=3), "--docs is about generated queries"),
    (RunRequest(llm=True, query_set="s", min_doc_words=4), "--min-doc-words is about generated queries"),
    (RunRequest(llm=True, max_queries=5), "--max-queries goes with --qrels"),
    (RunRequest(qrels=True, clicks=True, query_set="s"), "--clicks and --qrels are two label sources"),
    (RunRequest(qrels=True, click_model="pbm"), "--click-model goes with --clicks"),
    (RunRequest(llm=True, min_doc_words=0), "--min-doc-words of 0 must be at least 1"),
    (RunRequest(qrels=True, k=0), "--k of 0 must be at least 1"),
    (RunRequest(qrels=True, k=10, depth=5), "--depth of 5 is smaller than --k of 10"),
    (RunRequest(qrels=True, strategies=("ann", "bm42")), "--strategies 'ann,bm42': unknown ['bm42']; choose from"),
    (RunRequest(qrels=True, strategies=()), "unknown empty list"),
    (RunRequest(qrels=True, pool_depth="5"), "--pool-depth goes with --llm"),
    (RunRequest(clicks=True), "--clicks grades the queries of a query set"),
])
def test_a_bad_request_is_refused_in_one_line_naming_the_option(llm_env, request_, words):
    with pytest.raises(SearchGradeError) as raised:
        run_config(request_)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_what_is_not_asked_for_is_the_default_a_run_would_use(llm_env):
    config = run_config(RunRequest(qrels=True))
    assert config.mode == "qrels" and config.index == IndexSettings() and config.llm is None
    assert config.strategies == ("ann", "fulltext", "hybrid", "ann_rerank", "fulltext_rerank", "hybrid_rerank")
    generated = run_config(RunRequest(llm=True, seed=7, docs=3, min_doc_words=4))
    assert (generated.mode, generated.llm.model, generated.llm.base_url) == ("llm", "env-model", "http://127.0.0.1:9/v1")
    assert (generated.querygen.seed, generated.querygen.n_docs) == (7, 3)
    # One explicit word minimum replaces the default's character minimum.
    assert (generated.querygen.min_words, generated.querygen.min_chars) == (4, 0)
    clicks = run_config(RunRequest(clicks=True, llm=True, query_set="s"))
    assert (clicks.mode, clicks.click_model, clicks.querygen) == ("clicks", "pbm", None)


def test_a_base_url_typed_empty_is_the_hosted_api_and_none_the_environments(llm_env, monkeypatch):
    assert run_config(RunRequest(llm=True)).llm.base_url == "http://127.0.0.1:9/v1"
    assert run_config(RunRequest(llm=True, base_url=" ")).llm.base_url is None
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(SearchGradeError, match="set OPENAI_API_KEY for the hosted API"):
        run_config(RunRequest(llm=True, base_url=""))


def test_a_query_set_or_reused_queries_generate_none(llm_env):
    assert run_config(RunRequest(llm=True, query_set="s")).querygen is None
    # Reused queries: the run generates none, and the settings are the defaults the run records.
    reused = run_config(RunRequest(llm=True, queries_from="run-1"))
    assert reused.queries_from == "run-1" and reused.querygen.n_docs == 50
