"""Judges as the command line names them, the panel's grade, and the cheapest sufficient judge."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.judges.choice import Candidate, Cost, cheapest_sufficient, panel_cost, stage_cost
from searchgrade.engine.judges.spec import JudgeSpec, panel_grade, parse_judge_models, parse_prices
from searchgrade.engine.statistics.judge_vs_human import Estimate


def test_judges_on_the_runs_endpoint_or_their_own():
    specs = parse_judge_models("gpt-4o-mini, qwen2.5@http://gpu:8000/v1")
    assert specs == (JudgeSpec("gpt-4o-mini", "gpt-4o-mini"),
                     JudgeSpec("qwen2.5@http://gpu:8000/v1", "qwen2.5", "http://gpu:8000/v1"))
    assert parse_judge_models("org/model@v2")[0].model == "org/model@v2"  # an @ that names no URL is the name's


@pytest.mark.parametrize(("text", "says"), [
    ("", "names no judge"), ("a,a", "twice"), ("panel", "panel's own name"), ("m@ftp://x/v1", "not an http"),
    (",".join(f"m{i}" for i in range(9)), "at most 8"),
])
def test_bad_judge_lists_say_what_is_wrong(text, says):
    with pytest.raises(SearchGradeError, match=says):
        parse_judge_models(text)


def test_prices_name_a_judge_by_its_name_or_model():
    judges = parse_judge_models("a,b@http://h:1/v1")
    assert parse_prices(["a=0.15", "b=2"], judges) == {"a": 0.15, "b@http://h:1/v1": 2.0}
    for bad in ("a", "a=-1", "a=cheap", "c=1"):
        with pytest.raises(SearchGradeError, match="--judge-price"):
            parse_prices([bad], judges)


def test_the_panels_grade_is_the_lower_median_of_the_judges_that_answered():
    assert panel_grade([3, 0, 2]) == 2
    assert panel_grade([3, 2]) == 2  # halves go down, as people's ratings combine
    assert panel_grade([None, 3, None]) == 3
    assert panel_grade([None, None]) is None
    assert panel_grade([3, 2], "mean") == 2 and panel_grade([3, 3, 2], "mean") == 3


def _candidate(name: str, value: float, low: float, usd: float | None, tokens: float = 1000.0) -> Candidate:
    return Candidate(name, Estimate(value, low, min(1.0, value + 0.1)), Cost(10, tokens, usd, 0.5))


def test_the_cheapest_judge_within_the_best_ones_interval_is_recommended():
    picked = cheapest_sufficient([_candidate("big", 0.95, 0.80, 3.0), _candidate("small", 0.85, 0.7, 0.1),
                                  _candidate("bad", 0.5, 0.3, 0.01)])
    assert picked.name == "small" and picked.sufficient == ["big", "small"]
    alone = cheapest_sufficient([_candidate("big", 0.95, 0.94, 3.0), _candidate("small", 0.85, 0.7, 0.1)])
    assert alone.name == "big" and "no other judge" in alone.text


def test_without_prices_tokens_decide_and_without_costs_nothing_is_recommended():
    assert cheapest_sufficient([_candidate("a", 0.9, 0.8, None, 5000), _candidate("b", 0.9, 0.8, None, 900)]).name == "b"
    nothing = cheapest_sufficient([Candidate("a", Estimate(0.9, 0.8, 1.0), Cost(0, None, None, None))])
    assert nothing.name is None and "cache" in nothing.text


def test_costs_count_what_was_sent_and_a_panel_sums_its_judges():
    cost = stage_cost({"requests": 12, "ok": 9, "failures": 1, "prompt_tokens": 2900, "completion_tokens": 120,
                       "latency_s": 6.0, "cache_hits": 40}, price=0.5)
    assert cost.pairs_sent == 10 and cost.tokens_per_1000 == pytest.approx(302_000)
    assert cost.usd_per_1000 == pytest.approx(0.151) and cost.latency_s == pytest.approx(0.5)
    assert stage_cost({"cache_hits": 40}, None).tokens_per_1000 is None
    both = panel_cost([cost, stage_cost({"ok": 10, "prompt_tokens": 1000}, 1.0)])
    assert both.tokens_per_1000 == pytest.approx(402_000) and both.usd_per_1000 == pytest.approx(0.251)


@pytest.fixture
def llm_env(monkeypatch):
    monkeypatch.delenv("SEARCHGRADE_LLM_MODEL", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")


@pytest.mark.parametrize(("fields", "words"), [
    ({"qrels": True, "judge_models": ("a", "b")}, "--judge-models goes with --llm"),
    ({"qrels": True, "llm": True, "model": "m", "judge_prices": ("m=1",)}, "--judge-price goes with --judge-models"),
    ({"qrels": True, "llm": True, "judge_models": ("a",), "judge_prices": ("c=1",)}, "'c' is not one of the judges"),
    ({"qrels": True, "llm": True, "judge_models": ("a", "a")}, "names a twice"),
])
def test_a_panel_request_is_checked_where_every_request_is(llm_env, fields, words):
    from searchgrade.engine.run.request import RunRequest, run_config

    with pytest.raises(SearchGradeError, match=words):
        run_config(RunRequest(**fields))


def test_a_click_graded_run_takes_a_panel_too(llm_env):
    # Issue 36: the panel grades against the clicks and, with --judge-unjudged, the pairs they left unjudged.
    from searchgrade.engine.run.request import RunRequest, run_config

    config = run_config(RunRequest(clicks=True, llm=True, query_set="s", judge_unjudged=True, judge_models=("a", "b"),
                                   strategies=("fulltext",)))
    assert config.mode == "clicks" and config.judge_unjudged and config.judges == ("a", "b")


def test_a_panel_needs_no_model_its_first_judge_is_the_runs(llm_env):
    from searchgrade.engine.run.request import RunRequest, run_config

    config = run_config(RunRequest(qrels=True, llm=True, strategies=("fulltext",),
                                   judge_models=("small", "big@http://127.0.0.1:9/v1"),
                                   judge_prices=("small=0.1", "big=2")))
    assert config.llm.model == "small" and config.judges == ("small", "big@http://127.0.0.1:9/v1")
    assert config.judge_prices == {"small": 0.1, "big@http://127.0.0.1:9/v1": 2.0} and config.judge_aggregate == "median"


def test_a_judges_own_endpoint_typed_in_the_app_is_marked_so_its_connections_are_guarded(monkeypatch):
    from searchgrade.engine.judges.panel import judge_settings
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.server.outbound import check_judge_endpoints

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    typed = check_judge_endpoints(["a", "b@http://127.0.0.1:8/v1", "c@http://127.0.0.1:9/v1"], exposed=False)
    assert typed == {"b@http://127.0.0.1:8/v1": "app", "c@http://127.0.0.1:9/v1": ""}  # c's is the operator's
    run = LLMSettings(model="a", base_url="http://127.0.0.1:7/v1", declared_in="app")
    a, b = parse_judge_models("a,b@http://127.0.0.1:8/v1")
    assert judge_settings(run, a, typed).declared_in == "app"  # the run's endpoint, as the run marked it
    assert (judge_settings(run, b, typed).base_url, judge_settings(run, b, typed).declared_in) == (
        "http://127.0.0.1:8/v1", "app")
    assert judge_settings(LLMSettings(model="a"), b, {}).declared_in == ""  # typed on the command line
    assert judge_settings(run, a, typed, temperature=None).temperature is None
