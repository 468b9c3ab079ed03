"""Results: one run's dashboard."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine.metrics import SOURCE_FOUND
from searchgrade.engine.run.strategies import base_of
from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.viewmodels.common import (
    METRIC_LABELS,
    PRIMARY_METRIC,
    WITH,
    WITHOUT,
    best_word,
    metric_label,
    metric_names,
    primary_k,
)
from searchgrade.viewmodels.downloads import per_query_csv, results_csv, trec_zip
from searchgrade.viewmodels.metric_help import metric_explained
from searchgrade.viewmodels.reranker import trained_reranker_use
from searchgrade.viewmodels.results import bar_series, reranker_state
from searchgrade.viewmodels.runs import settings_words
from searchgrade.views._colors import strategy_colors
from searchgrade.views._common import (
    chart_text,
    get_store,
    glossary,
    home,
    ideal_words,
    pick_run,
    plain,
    public,
    results_view,
    resume_controls,
    run_choices,
    running_controls,
)
from searchgrade.views._failures import failures_section
from searchgrade.views._holes import results_holes
from searchgrade.views._judges import judges_section
from searchgrade.views._rating import rescore_controls
from searchgrade.views._reranker import train_section
from searchgrade.views._result_overlap import overlap_table, search_problems
from searchgrade.views._slices import query_slices_section
from searchgrade.views._suite_actions import suite_actions
from searchgrade.views._traffic import coverage_section, traffic_section
from searchgrade.views._tune import tune_section
from searchgrade.views._variants import quality_cost_section

st.session_state.setdefault("results_metric", PRIMARY_METRIC)

st.title("Results")
choices = run_choices()
if not choices:
    st.info("No runs yet. Start one on the Evaluate page.")
    st.page_link("views/evaluate.py", label="Evaluate search quality", icon=":material/play_circle:")
    st.stop()

run_id = pick_run(choices, "results_run")
run = get_store().get_run(run_id)
if run.status != "complete":
    if run.status == "running":
        running_controls(run, "results_running")
    else:
        st.error(public(f"This run is {run.status}: {run.error or 'no error recorded'}"))
        resume_controls(run, "results_resume")
    st.stop()

left, right, _ = st.columns([2, 1, 3])
metrics = metric_names(run)
if st.session_state.get("results_metric") not in metrics:
    st.session_state["results_metric"] = PRIMARY_METRIC
metric = left.selectbox("Metric", metrics, format_func=METRIC_LABELS.get, key="results_metric",
                        help="The metrics that apply to this run's labels; judged@k, a diagnostic of the grades, "
                             "is shown beside them. The glossary at the foot of the page defines each.")
cutoffs = list(range(1, run.depth + 1))
if st.session_state.get("results_k") not in cutoffs:
    st.session_state["results_k"] = primary_k(run)
k = right.selectbox("k", cutoffs, key="results_k")
view = results_view(home(), run_id, metric, k)
name = metric_label(metric, k)
# What the picked metric is, where it is picked: its definition, range and direction (its record's),
# and for DCG the queries' ideal, to read a value against.
st.caption(plain(f"{name}: {metric_explained(metric, k, run)}"))
ideal = ideal_words(home(), run_id, metric, k)
if ideal:
    st.caption(plain(ideal))

# -- the decision first: the recommendation in words, then the tiles, all at this metric and k
head = view.headline
show = {"good": st.success, "warn": st.warning, "info": st.info}
decision, *findings = view.recommendations or [None]
if decision is not None and head is not None:
    show[decision.kind](plain(decision.text), icon=":material/flag:")
a, b, c = st.columns(3)
if head is not None:
    # A lone strategy is not the best of anything: the tile names the metric only.
    a.metric(f"Best {head.metric}" if head.n_strategies >= 2 else head.metric, f"{head.value:.3f}",
             help=f"95% CI {head.ci_low:.3f} to {head.ci_high:.3f} over the queries", border=True)
    if head.recommended:
        b.metric("Recommended strategy", plain(head.label), border=True,
                 help=f"Significantly better on {head.metric} than every other strategy evaluated "
                      "(paired test, interval adjusted for the page's comparisons).")
    elif head.n_strategies < 2:
        b.metric("Strategy evaluated", plain(head.label), border=True,
                 help="Only one strategy ran: there was no choice to make.")
    else:
        b.metric(f"{best_word(metric).capitalize()}, no clear winner", plain(head.label), border=True,
                 help=plain("; ".join(
                     ([f"Not distinguishable on {head.metric} from {', '.join(head.ties)} on these queries"]
                      if head.ties else [])
                     + ([f"too few results of {', '.join(head.withheld)} judged to compare"] if head.withheld else []))
                     + ": no recommendation."))
c.metric("Queries evaluated", f"{head.n_queries if head else 0:,}", border=True)
LABELS = {"human": "human labels", "llm": "LLM judge grades (0-3)",
          "human+llm": "human labels, LLM judge grades where they miss a result", "clicks": "click grades",
          "clicks+llm": "click grades, LLM judge grades where the clicks miss a result"}
st.caption(plain(f"{run.collection_name} · {LABELS.get(run.label_source, run.label_source)} (relevant = "
                 f"grade ≥ {run.threshold}) · every figure on this page at {name} unless it says otherwise · "
                 f"{run.depth} results kept per query · run {run.run_id}"))
suite_actions(run_id)
for sentence in view.short_list_warnings:
    st.warning(plain(sentence.text), icon=":material/format_list_numbered:")
if isinstance(run.stats, dict) and run.stats.get("self_graded"):
    # The LLM reranker is the judge's model: the system is graded by itself (issue 27).
    st.warning(plain(run.stats["self_graded"]["note"]), icon=":material/warning:")
panel = view.llm
with st.expander("How this run was made (settings, judge, notes, index)"):
    # The settings this run changed from the defaults, in the words Compare and suites use for them.
    st.caption(plain(settings_words(run)))
    if panel is not None:
        parts = [f"Judge: {panel.judge_model or 'unknown model'}"
                 + (f", prompt {panel.judge_prompt}" if panel.judge_prompt else "")]
        if panel.querygen_model:
            parts.append(f"queries written by {panel.querygen_model}, prompt {panel.querygen_prompt}")
        if panel.queries_from:
            parts.append(f"queries reused from run {panel.queries_from}")
        st.caption(plain(" · ".join(parts)))
    for note in view.notes:
        st.caption(plain(f"Note: {note}"))
    if view.embedding:
        st.caption(plain(view.embedding))
    if view.ann_index:
        st.caption(plain(view.ann_index))
    if panel is None and not (view.notes or view.embedding or view.ann_index):
        st.caption(plain("Strategies: " + ", ".join(strategy_label(s) for s in view.strategies) + "."))
rescore_controls(run, "results")
search_problems(run_id)

# -- the main comparison: bars beside the two tables
state = reranker_state(run, view.strategies)
st.subheader(state.title(name))
if not state.ran and state.why_not:
    st.caption(plain(" ".join(state.why_not)))
chart, tables = st.columns([3, 2])
figure = go.Figure()
decimals = 3
# One colour per strategy, on every chart (views/_colors.py): a reranked twin a darker shade of its
# base's, each reranker of one base its own.
colors = strategy_colors([*view.strategies, *view.by_position["strategy"]])
for series, frame in bar_series(view.metric_summary).items():
    figure.add_bar(
        # Plain lists, not arrays: the figure's JSON then holds the numbers as they are stored.
        name=series, x=[chart_text(s) for s in frame["Strategy"]], y=frame["value"].tolist(),
        marker_color=[colors[s] for s in frame["strategy"]], showlegend=False,
        error_y={"type": "data", "array": frame["err_plus"].tolist(),
                 "arrayminus": frame["err_minus"].tolist(), "visible": True},
        text=[f"{v:.{decimals}f}" for v in frame["value"]], textposition="inside", insidetextanchor="start",
        customdata=[[lo, hi, chart_text(n)] for lo, hi, n in zip(frame["ci_low"], frame["ci_high"], frame["name"],
                                                                  strict=True)],
        offsetgroup=series,
        hovertemplate="%{customdata[2]}: %{y:.3f} (95% CI %{customdata[0]:.3f} to %{customdata[1]:.3f})"
                      "<extra></extra>",
    )
for strategy in view.metric_summary["strategy"]:
    # Each strategy's colour in the chart's data (the bars' traces are the series); Plotly draws no
    # legend entry for a trace without points, so the key a reader sees is the annotation below.
    figure.add_bar(name=chart_text(strategy_label(strategy)), x=[], y=[], marker_color=colors[strategy],
                   showlegend=False)
key_lines = [[s for s in view.metric_summary["strategy"] if base_of(s) is None],
             [s for s in view.metric_summary["strategy"] if base_of(s) is not None]]
figure.add_annotation(
    text="<br>".join("   ".join(f'<span style="color:{colors[s]}">■</span> {chart_text(strategy_label(s))}'
                                for s in line) for line in key_lines if line),
    xref="paper", yref="paper", x=0.5, y=-0.1, xanchor="center", yanchor="top", showarrow=False,
    align="left", font={"size": 12})
figure.update_layout(barmode="group", yaxis_title=name, height=430, margin={"t": 30, "b": 70},
                     showlegend=False, meta={"chart": "strategies", "metric": name})
chart.plotly_chart(figure, key="results_strategies_chart")
number = {"format": "%.3f"}
config = {c: st.column_config.NumberColumn(**number) for c in (WITHOUT, WITH)}
config["Change"] = st.column_config.NumberColumn(format="%+.3f")
tables.markdown(f"**{plain(name)}**")
tables.dataframe(view.metric_table.dropna(axis="columns", how="all"), hide_index=True, column_config=config)
tables.markdown(f"**Mean relevance@{k}** (the grades of the top {k} over {k} places: a missing result counts 0)",
                help=metric_explained("mean_relevance", k, run))
tables.dataframe(view.relevance_table.dropna(axis="columns", how="all"), hide_index=True,
                 column_config=config)
overlap_table(run_id, k)
# Judged@k beside the page's metric (source found, judged by the query's source document, has no
# holes: the panel shows NDCG then, and its table names it).
results_holes(run_id, "ndcg" if metric == SOURCE_FOUND else metric, k)
coverage_section(run, k)

# -- the other findings (the skipped strategies are said under the chart's title already), and the
# paired tests behind the decision
findings = [f for f in findings if state.ran or f.text not in state.why_not]
if findings:
    st.subheader("What else the results say")
    for sentence in findings:
        show[sentence.kind](plain(sentence.text))
with st.expander(f"Which differences are real? (paired tests on {name})"):
    for sentence in view.significance:
        st.write(plain(sentence.text))
    if view.significance_note:
        st.caption(view.significance_note)
quality_cost_section(view)  # the page's metric against what each strategy costs (a run with cost figures)

# -- by position: every query counted at every rank (a missing result 0), so the curve is mean relevance's
st.subheader(f"Mean relevance by position (1..{k})")
figure = go.Figure()
for strategy, frame in view.by_position.groupby("strategy", sort=False):
    figure.add_scatter(
        x=frame["rank"].tolist(), y=frame["mean_grade_all"].tolist(), mode="lines+markers",
        name=chart_text(strategy_label(strategy)), line={"color": colors[strategy]},
        customdata=frame[["with_result", "queries", "mean_grade"]].values.tolist(),
        hovertemplate=(chart_text(strategy_label(strategy)) + " at rank %{x}: %{y:.3f} over %{customdata[1]} "
                       "queries; %{customdata[0]} of them have a result there (their mean grade "
                       "%{customdata[2]:.3f})<extra></extra>"))
figure.update_layout(xaxis_title="Rank", yaxis_title="Mean grade (a missing result counts 0)", height=340,
                     margin={"t": 20}, xaxis={"dtick": 1}, meta={"chart": "position"})
st.plotly_chart(figure, key="results_position_chart")
counts = view.by_position.pivot_table(index="label", columns="rank", values="with_result", sort=False)
queries_per = view.by_position.groupby("label", sort=False)["queries"].first()
st.caption(plain(f"Each point: the mean grade at that rank over every query the strategy answered, a "
                 f"query without a result there counting 0. Queries with a result at rank 1 / {k}: "
                 + "; ".join(f"{s} {int(counts.loc[s, 1]) if 1 in counts.columns else 0} / "
                             f"{int(counts.loc[s, k]) if k in counts.columns else 0} of {int(queries_per[s])}"
                             for s in counts.index) + "."))

# -- baseline vs reranker, distribution
trained = trained_reranker_use(run)
st.subheader(trained.title if trained else "Baseline vs reranker")
if trained is not None:
    st.caption(plain(trained.caption))
if view.reranker_table.empty:
    st.caption(plain(state.table_note))
else:
    st.dataframe(
        view.reranker_table.drop(columns="strategy"), hide_index=True,
        column_config={**config, "CI low": st.column_config.NumberColumn(format="%+.3f"),
                       "CI high": st.column_config.NumberColumn(format="%+.3f"),
                       "p-value": st.column_config.NumberColumn(
                           format="%.3f", help="adjusted for every comparison on this page")},
    )
st.subheader(f"Relevance distribution of the top {k} ({k} places each, a missing result not relevant)")
st.dataframe(view.distribution, hide_index=True,
             column_config={c: st.column_config.NumberColumn(format="%.1f%%")
                            for c in view.distribution.columns if c != "Strategy"})

# -- the LLM's part: calls, failures, source found, agreement
if panel is not None:
    with st.expander("LLM judge: calls, failures, agreement with people"):
        if panel.query_types and run.mode == "llm":
            st.caption(plain("Queries: " + ", ".join(f"{n:,} {t}" for t, n in sorted(panel.query_types.items()))))
        st.markdown("**LLM calls, tokens and cache hits per stage**")
        if panel.usage.empty:
            st.caption("No LLM accounting stored for this run.")
        else:
            st.dataframe(panel.usage, hide_index=True, key="results_llm_usage",
                         column_config={"Time in calls (s)": st.column_config.NumberColumn(format="%.1f")})
        if not panel.source_found.empty:
            found_col, _ = st.columns([2, 3])
            found_col.markdown(f"**Source found@{k}**: the query's source document is in the top {k}")
            found_col.dataframe(
                panel.source_found[["label", "value", "ci_low", "ci_high"]].rename(columns={
                    "label": "Strategy", "value": f"Source found@{k}", "ci_low": "CI low", "ci_high": "CI high"}),
                hide_index=True, key="results_source_found",
                column_config={c: st.column_config.NumberColumn(format="percent")
                               for c in (f"Source found@{k}", "CI low", "CI high")})
        st.markdown(f"**Judge failures: {panel.judge_failures:,}**"
                    + (f" of {panel.pairs:,} pairs" if panel.pairs else ""))
        if panel.judge_failures:
            st.caption("A failed judgment is never a grade: it counts as 0 in DCG and the other rank "
                       "metrics, is left out of mean relevance and the distribution, and is asked again "
                       "on the next run or resume." if panel.failures_in_metrics else
                       "These pairs were judged only to measure agreement with the human labels; the "
                       "metrics use human labels.")
        if not panel.failures.empty:
            st.dataframe(panel.failures, hide_index=True, key="results_judge_failures")
        elif panel.failure_reasons:
            st.dataframe([{"Reason": r, "Pairs": n} for r, n in panel.failure_reasons.items()], hide_index=True)
        agreement = panel.agreement
        if agreement is not None:
            st.markdown(f"**Judge vs human labels** on the {agreement.n:,} pairs both graded"
                        + (f": exact agreement {agreement.exact:.0%}" if agreement.exact is not None else ""))
            kappa_col, matrix_col = st.columns([3, 2])
            kappa_col.dataframe(agreement.kappas, hide_index=True, key="results_kappas",
                                column_config={"Value": st.column_config.NumberColumn(format="%.2f")})
            matrix_col.caption("Pairs per judge grade (rows) and human grade (columns)")
            matrix_col.dataframe(agreement.confusion, key="results_confusion")

judges_section(run, metric, k, "results")
query_slices_section(run, metric, k)
traffic_section(run, metric, k)

# -- queries
st.subheader(f"Best and worst queries by mean relevance@{k} (averaged over strategies)")
query_config = {"mean_value": st.column_config.NumberColumn("Mean relevance", format="%.3f"),
                "max_value": st.column_config.NumberColumn("Best", format="%.3f"),
                "min_value": st.column_config.NumberColumn("Worst", format="%.3f"),
                "text": "Query", "query_id": "Query id", "query_type": "Type",
                "best_strategy": "Best strategy", "worst_strategy": "Worst strategy"}
best, worst = st.columns(2)
best.markdown("**Best**")
best.dataframe(view.best_queries, hide_index=True, column_config=query_config, key="results_best")
worst.markdown("**Worst**")
worst.dataframe(view.worst_queries, hide_index=True, column_config=query_config, key="results_worst")

failures_section(run)

with st.expander("Latency per query"):
    st.dataframe(view.latency.drop(columns="strategy"), hide_index=True,
                 column_config={"p50_ms": st.column_config.NumberColumn("Median (ms)", format="%.1f"),
                                "p95_ms": st.column_config.NumberColumn("p95 (ms)", format="%.1f")})

train_section(run)
tune_section(run.run_id, metric, k)
glossary(metrics, k, run)

# -- downloads
st.subheader("Downloads")
one, two, three, _ = st.columns([1, 1, 1, 1])
one.download_button("Per-query metrics (CSV)", data=lambda: per_query_csv(get_store(), run_id),
                    file_name=f"{run_id}-metrics.csv", mime="text/csv", on_click="ignore")
two.download_button("Ranked results (CSV)", data=lambda: results_csv(get_store(), run_id),
                    file_name=f"{run_id}-results.csv", mime="text/csv", on_click="ignore")
three.download_button("TREC run files (zip)", data=lambda: trec_zip(get_store(), run_id),
                      file_name=f"{run_id}-trec.zip", mime="application/zip", on_click="ignore")
st.caption("Every exported score is strictly decreasing within a query (a tie lowered a millionth below the score "
           "above it), so trec_eval, ir_measures and ranx rank each file as this page does and give its figures.")
st.page_link("views/drilldown.py", label="Look at one query in detail", icon=":material/search:")
