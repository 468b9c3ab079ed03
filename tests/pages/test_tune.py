"""Results' Tune section (views/_tune.py): a tuning starts in the background, its progress shows
while it runs, then the held-out comparison in words, the Pareto front, the trials and the tuned
configuration as flags. The tuning itself is the engine's real `tune` over a synthetic target
(tests/engine/tuning/test_heldout.py), standing in for `run_study` (which rebuilds a real run)."""

from __future__ import annotations

import threading
import time

import pytest

from searchgrade.engine.metrics import parse_metric
from searchgrade.engine.tuning.judging import DEFAULT_JUDGE_BUDGET
from searchgrade.engine.tuning.space import default_space
from searchgrade.engine.tuning.tuner import tune
from searchgrade.server import jobs
from tests.engine.tuning.test_heldout import fixture
from tests.pages.conftest import APPTEST_TIMEOUT_S

pytestmark = pytest.mark.usefixtures("clean_jobs")


def section():
    import streamlit as st

    from searchgrade.views._tune import tune_section

    tune_section(st.session_state["tune_run"])


@pytest.fixture
def fake_study(monkeypatch):
    release = threading.Event()
    calls = []

    def run_study(store, run_id, data_dir, *, strategy=None, trials=50, time_budget_s=None, on_trial=None,
                  on_ready=None, judge_budget=None, metric=None, **_):
        calls.append((strategy, trials, time_budget_s, judge_budget, metric))
        target, grades, split, _ = fixture([False])
        on_ready(None, split)
        store.open_tuning_study("s1", run_id, strategy, "ndcg@3", [], 0, split.to_json())

        def keep(record):
            store.add_tuning_trial("s1", record)
            on_trial(record, None)
            release.wait(30)

        report = tune(target, grades, split, default_space("hybrid", "h"), parse_metric("ndcg@3"), k=3,
                      threshold=1, trials=trials, seed=0, on_trial=keep)
        report.update(study="s1", configuration={"flags": "--fusion 'convex(w=0.1,norm=minmax,depth=3)'"})
        store.finish_tuning_study("s1", report)

    monkeypatch.setattr("searchgrade.engine.tuning.study.run_study", run_study)
    yield release, calls
    release.set()


def _open_section(run_id: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(section, default_timeout=APPTEST_TIMEOUT_S)
    at.session_state["tune_run"] = run_id
    return at.run()


def _click_tune(at) -> None:
    at.button[[b.label for b in at.button].index("Tune")].click().run()


def _text(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "error")
                     for e in at.get(kind)).replace("\\", "")


def test_tuning_from_results_shows_progress_then_the_held_out_comparison(tiny_run, fake_study):
    release, calls = fake_study
    at = _open_section(tiny_run)
    assert "Tune a strategy" in [h.value for h in at.subheader]
    # A qrels run has no judge to spend: no judge budget is asked for, none is passed.
    assert "results_tune_judge_budget" not in [n.key for n in at.number_input]
    assert "ANN (dense)" not in at.selectbox(key="results_tune_strategy").options  # exact search: nothing to tune
    assert at.selectbox(key="results_tune_strategy").options == ["ANN + reranker", "Full-text (BM25)"]
    # The page's metric by default (the section alone: the headline, DCG at the run's k), or another.
    assert at.selectbox(key="results_tune_metric").value == "dcg"
    assert "pct_not_relevant" not in at.selectbox(key="results_tune_metric").options  # lower is better
    at.selectbox(key="results_tune_strategy").set_value("fulltext")
    at.selectbox(key="results_tune_metric").set_value("ndcg")
    at.number_input(key="results_tune_trials").set_value(15)
    _click_tune(at)
    assert calls == [("fulltext", 15, None, None, "ndcg@3")] and jobs.active_job().kind == "tune"
    assert "Tuning continues if you close or refresh this tab" in _text(at)
    release.set()
    deadline = time.time() + 30
    while jobs.active_job() is not None and time.time() < deadline:
        time.sleep(0.1)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    words = _text(at)
    assert "18 held-out queries (tuned on 42 others)" in words
    assert "significant; use the tuned configuration" in words
    assert "The tuner read held-out grades 0 times while tuning." in words
    trials = at.dataframe[0].value
    assert len(trials) == 15 and (trials["Pareto front"] == "yes").any()
    assert {"Trial", "NDCG@3", "p95 latency (ms)"} <= set(trials.columns), trials.columns
    assert any("--fusion 'convex(w=0.1" in c.value for c in at.code)
    # The form keeps what was typed (it snapped back to its defaults after a tuning), and the
    # configurations are said in words, not JSON.
    assert at.selectbox(key="results_tune_strategy").value == "fulltext"
    assert at.selectbox(key="results_tune_metric").value == "ndcg"
    assert at.number_input(key="results_tune_trials").value == 15
    assert "Start: Fusion method" in words and "{" not in words.split("Start:")[1]


def test_an_llm_run_is_tuned_with_the_judge_budget_typed(store, fake_study):
    from tests.pages.synthetic import llm_spec, write_run

    release, calls = fake_study
    release.set()
    at = _open_section(write_run(store, llm_spec()))
    assert at.number_input(key="results_tune_judge_budget").value == DEFAULT_JUDGE_BUDGET  # as --judge-budget
    at.number_input(key="results_tune_judge_budget").set_value(7)
    _click_tune(at)
    assert not at.exception, [e.message for e in at.exception]
    assert [call[3] for call in calls] == [7]


def test_evaluate_this_configuration_starts_a_run_of_the_tuned_configuration(tiny_run, store, monkeypatch):
    """The button starts a background job whose configuration is the run's with the tuned BM25
    parameters, and says where to watch it. The job's pipeline is a recorder (the synthetic run's
    collection is not on disk); engine/tuning/apply.py makes the configuration for real."""
    from types import SimpleNamespace

    from tests.pages.conftest import open_page

    target, grades, split, _ = fixture([False])
    report = tune(target, grades, split, default_space("hybrid", "h"), parse_metric("ndcg@3"), k=3, threshold=1,
                  trials=2, seed=0)
    # The study as run_study keeps it for a fulltext tuning of this run.
    report.update(study="s2", run=tiny_run, kind="fulltext", strategy="fulltext",
                  best={"bm25_k1": 1.2, "bm25_b": 0.6}, configuration={"flags": "--bm25-k1 1.2 --bm25-b 0.6"},
                  judge={"budget": 1, "pairs_judged": {"tuning": 1, "heldout": 2}, "cache_hits": 0, "failures": 0,
                         "requests": {"tuning": 1, "heldout": 2, "total": 3}, "unjudged_over_budget": 4,
                         "budget_spent": True})
    store.open_tuning_study("s2", tiny_run, "fulltext", "ndcg@3", [], 0, split.to_json())
    store.finish_tuning_study("s2", report)
    started = []
    real = jobs.start_job

    def start_job(load, config, store_, data_dir, *, label):
        started.append((load, config, label))

        def run(collection, config, store, data_dir, **_):
            return SimpleNamespace(run_id="new", status="complete", skipped={})

        return real(lambda: SimpleNamespace(notes=[]), config, store_, data_dir, label=label, run=run)

    monkeypatch.setattr(jobs, "start_job", start_job)
    at = open_page("views/results.py", state={"app_open_run": tiny_run})
    assert ("The run's LLM judge graded 1 new pairs during tuning (budget 1) and 2 for the held-out comparison, 0 "
            "from the cache (3 requests); 4 new pairs stayed unjudged once the budget was spent.") in _text(at)
    at.button(key="results_tune_evaluate").click().run()
    assert not at.exception, [e.message for e in at.exception]
    (load, config, label), = started
    run = store.get_run(tiny_run)
    assert config.index.bm25_k1 == 1.2 and config.index.bm25_b == 0.6
    from searchgrade.engine.run.config import RunConfig

    assert config.strategies == RunConfig.from_json(run.config).strategies and config.mode == run.mode
    assert label == config.name == f"{run.name} · fulltext tuned"
    assert at.session_state["evaluate_job_id"] == at.session_state["results_tune_started"]
    assert "watch it on the Evaluate page" in "\n".join(s.value for s in at.success)
    assert "Watch it on Evaluate" in [link.label for link in at.get("page_link")]
