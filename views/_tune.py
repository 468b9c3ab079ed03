"""Results: tune a strategy's parameters on some of the run's queries, follow the trials, and read
the held-out comparison (engine/tuning/, docs/tuning.md).

The coordinator wires it into views/results.py with one line: ``tune_section(run.run_id)``.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.metrics import metric_record, parse_metric
from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.engine.tuning.view import (
    DEFAULT_JUDGE_BUDGET,
    UNTUNABLE,
    comparison_words,
    configuration_words,
    trial_table,
    tune_view,
    tuned_run_parts,
)
from searchgrade.server import jobs
from searchgrade.viewmodels.common import PRIMARY_METRIC, metric_label, metric_names, primary_k
from searchgrade.views._common import get_store, home, plain

#: The form's last choices, kept outside its widgets: while a tuning runs the form is not drawn, and
#: Streamlit forgets the state of widgets that left the page (the form snapped back to its defaults).
CHOICES = "results_tune_choices"


@st.fragment(run_every=2.0)
def _live(job_id: str, run_id: str) -> None:
    job = jobs.snapshot(job_id)
    if job is None:
        return
    if not job.active:
        st.rerun()
    stage = job.stages.get("tune")
    done, total = (stage.done, stage.total) if stage else (0, 1)
    view = tune_view(get_store(), run_id)
    best = f" · best so far {view.best_so_far:.4f}" if view.best_so_far is not None else ""
    st.progress(stage.fraction if stage else 0.0, text=f"Tuning: trial {done} of {total}{best}")
    st.caption("Tuning continues if you close or refresh this tab; its trials are kept, so a cancelled "
               "tuning continues where it stopped.")


def _front(trials: list[dict], metric: str) -> go.Figure:
    main = [t for t in trials if t["fold"] == max(t["fold"] for t in trials)] if trials else []
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=[t["p95_ms"] for t in main], y=[t["value"] for t in main], mode="markers",
                                name="trials", marker={"color": "#9db8d2"},
                                text=[f"trial {t['trial']}" for t in main]))
    front = sorted((t for t in main if t["pareto"]), key=lambda t: t["p95_ms"])
    figure.add_trace(go.Scatter(x=[t["p95_ms"] for t in front], y=[t["value"] for t in front],
                                mode="lines+markers", name="Pareto front", line={"color": "#1f5f99"},
                                text=[f"trial {t['trial']}" for t in front]))
    figure.update_layout(xaxis_title="p95 latency (ms)", yaxis_title=metric, height=360,
                         margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return figure


def _evaluate_tuned(run_id: str, report: dict) -> None:
    """ "Evaluate this configuration": a new run of the collection with the tuned configuration, in
    the background worker (as the Evaluate page starts runs); its progress is on Evaluate."""
    st.markdown("**Evaluate this configuration**: a new run of the same collection and queries with the tuned "
                "parameters, to compare with this one (and to save as a suite).")
    active = jobs.active_job()
    if st.button("Evaluate this configuration", key="results_tune_evaluate", disabled=active is not None):
        try:
            load, config = tuned_run_parts(get_store(), run_id, report)
        except SearchGradeError as exc:
            st.error(plain(str(exc)))
            return
        job, started = jobs.start_job(load, config, get_store(), home(), label=f"{config.name}")
        if not started:
            st.toast("Another job is running: the tuned configuration was not started.")
            return
        st.session_state["evaluate_job_id"] = job.job_id
        st.session_state["evaluate_form"] = False
        st.session_state["results_tune_started"] = job.job_id
    started = st.session_state.get("results_tune_started")
    if started:
        st.success(f"The tuned configuration is being evaluated ({plain(str(jobs.snapshot(started).collection))}): "
                   "watch it on the Evaluate page; it opens in Results when complete.")
        st.page_link("views/evaluate.py", label="Watch it on Evaluate", icon=":material/play_circle:")
    elif active is not None:
        st.caption("Another job is running; the tuned configuration can be evaluated when it ends.")


def _label(metric: str) -> str:
    """ "ndcg@10" as the pages say it: "NDCG@10"."""
    spec = parse_metric(metric)
    return metric_label(spec.key, spec.k) if spec.k else metric_record(spec.key).label


def _report(report: dict, trials: list[dict], run_id: str) -> None:
    for sentence in comparison_words(report):
        st.markdown(plain(sentence))
    label = _label(report["metric"])
    st.plotly_chart(_front(trials, label), key="results_tune_front")
    st.dataframe(pd.DataFrame(trial_table(trials, label)), hide_index=True, key="results_tune_trial_table")
    words = report.get("configuration") or {}
    st.markdown("**The tuned configuration**" + (" (the held-out gain is not significant: the starting one "
                                                  "stays the recommendation)" if report["recommendation"] == "start"
                                                  else ""))
    if words.get("flags"):
        st.code(f"searchgrade evaluate ... --strategies {report['strategy']} {words['flags']}", language="bash")
    if words.get("snippet"):
        st.code(words["snippet"], language="toml")
    st.caption(plain(f"Start: {configuration_words(report['start'])} · tuned: {configuration_words(report['best'])} "
                     f"· study {report['study']}"))
    _evaluate_tuned(run_id, report)


def tune_section(run_id: str, metric: str | None = None, k: int | None = None) -> None:
    """The "Tune a strategy" part of a complete run's Results, on the page's metric and k unless
    another is picked (the tuner maximises a quality metric where higher is better)."""
    store = get_store()
    run = store.get_run(run_id)
    k = k or primary_k(run)
    st.subheader("Tune a strategy")
    st.caption("Optuna's TPE searches the strategy's parameters (BM25 k1 and b, the fusion method, its "
               "weight and depth, the rerank depth, a declared strategy's template variables) on part of "
               "the queries; the gain is measured on the other part, with a paired 95% CI.")
    job = jobs.latest_job()
    mine = job is not None and job.kind == "tune" and job.run_id == run_id
    if mine and job.active:
        _live(job.job_id, run_id)
        return
    if mine and job.state in ("failed", "cancelled"):
        st.error(plain(f"Tuning stopped: {job.error}"))
    strategies = run.config.get("strategies") or sorted({r["strategy"] for r in store.metric_summary(run_id)})
    options = [s for s in strategies if s not in UNTUNABLE]
    # What the tuner can maximise: the page's quality metrics where higher is better (computed from
    # grades; not the share not relevant, whose twin share relevant ranks alike).
    tunable = [m for m in metric_names(run) if metric_record(m).function is not None and metric_record(m).higher_is_better]
    page_metric = metric if metric in tunable else PRIMARY_METRIC
    kept = st.session_state.get(CHOICES) or {}
    defaults = {"results_tune_strategy": kept.get("strategy"), "results_tune_metric": kept.get("metric", page_metric),
                "results_tune_trials": kept.get("trials", 50), "results_tune_budget": kept.get("budget", 0),
                "results_tune_judge_budget": kept.get("judge_budget", DEFAULT_JUDGE_BUDGET)}
    for key, value in defaults.items():
        if key not in st.session_state and value is not None and (key != "results_tune_strategy" or value in options):
            st.session_state[key] = value
    if st.session_state.get("results_tune_metric") not in tunable:
        st.session_state["results_tune_metric"] = page_metric
    active = jobs.active_job()
    with st.form("results_tune_form", border=True):
        strategy = st.selectbox("Strategy", options, key="results_tune_strategy", format_func=strategy_label)
        tuned_metric = st.selectbox("Maximise", tunable, key="results_tune_metric",
                                    format_func=lambda m: metric_label(m, k),
                                    help=f"The metric the tuner maximises, at the page's k ({k}); the page's "
                                         "metric by default.")
        trials = st.number_input("Trials", min_value=1, max_value=1000, step=10, key="results_tune_trials")
        budget = st.number_input("Time budget (seconds, 0 for none)", min_value=0, max_value=86_400,
                                 step=60, key="results_tune_budget")
        judge_budget = None
        if run.mode == "llm":
            judge_budget = st.number_input(
                "New pairs the judge may grade while tuning", min_value=0, max_value=100_000,
                step=50, key="results_tune_judge_budget",
                help="Results a trial retrieves that the run's LLM judge never graded: each is judged once, "
                     "through the cache, until this many; the rest count as unjudged. The held-out "
                     "comparison judges every pair it shows.")
        start = st.form_submit_button("Tune", type="primary", disabled=active is not None or not options)
    if active is not None:
        st.caption("Another job is running; tuning can start when it ends.")
    if start:
        st.session_state[CHOICES] = {"strategy": strategy, "metric": tuned_metric, "trials": int(trials),
                                     "budget": int(budget),
                                     "judge_budget": None if judge_budget is None else int(judge_budget)}
        _, started = jobs.start_tuning(run_id, store, home(), label=run.collection_name, strategy=strategy,
                                       trials=int(trials), time_budget_s=float(budget) or None,
                                       judge_budget=None if judge_budget is None else int(judge_budget),
                                       metric=f"{tuned_metric}@{k}")
        if not started:
            st.toast("Another job is running: tuning was not started.")
        st.rerun()
    view = tune_view(store, run_id)
    if view.study is not None and view.study["report"] is not None:
        st.caption(plain(f"The latest tuning: {strategy_label(view.study['strategy'])} on "
                         f"{_label(view.study['metric'])}."))
        _report(view.study["report"], view.trials, run_id)
    elif view.study is not None:
        st.info(plain(f"A tuning of {view.study['strategy']} stopped after {len(view.trials)} trials: tune it "
                      "again with the same settings to continue."))
