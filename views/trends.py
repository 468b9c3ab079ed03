"""Trends: one metric across runs over time, one series per collection and strategy, with 95% CI
bands, broken where runs are not comparable (viewmodels/trends.py); or, with a suite picked, the
suite's runs as one paired series per strategy with its significant changes marked and what changed
named (viewmodels/suites.py, drawn as on the Suites page)."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine.metrics import parse_metric
from searchgrade.viewmodels.common import (
    METRIC_LABELS,
    PRIMARY_K,
    PRIMARY_METRIC,
    metric_label,
    metric_names,
)
from searchgrade.viewmodels.suites import (
    metric_parts,
    metric_words,
    suite_names,
    suite_runs_table,
    suite_trend,
    summary,
)
from searchgrade.viewmodels.trends import trend_series, trend_table
from searchgrade.views._colors import band_color, strategy_color
from searchgrade.views._common import (
    chart_text,
    get_store,
    glossary,
    home,
    plain,
    run_choices,
    trend,
    trend_cutoffs,
)
from searchgrade.views._suite_trend import suite_trend_chart
from searchgrade.views._traffic import runs_coverage

ALL = "All collections"
NO_SUITE = "None: every run"

st.session_state.setdefault("trends_metric", PRIMARY_METRIC)

st.title("Trends")
runs = run_choices(complete_only=True)
if not runs:
    st.info("No complete run yet. Start one on the Evaluate page.")
    st.stop()
runs_key = tuple(r.run_id for r in runs)
cutoffs = trend_cutoffs(home(), runs_key)
# The latest run's collection first: one collection's runs are what a trend compares.
collections = list(dict.fromkeys(r.collection_name for r in runs))
options = [*collections, ALL] if len(collections) > 1 else collections
one, two, three, four = st.columns(4)
if st.session_state.get("trends_collection") not in options:
    st.session_state["trends_collection"] = options[0]
collection = three.selectbox("Collection", options, key="trends_collection",
                             help="The latest run's collection by default: a line joins only runs of one "
                                  "collection on one query set.")
store = get_store()
suites = suite_names(store, None if collection == ALL else collection)
if st.session_state.get("trends_suite") not in [NO_SUITE, *suites]:
    st.session_state["trends_suite"] = NO_SUITE
suite = four.selectbox("Suite", [NO_SUITE, *suites], key="trends_suite", disabled=not suites,
                       help="A suite's runs hold the same frozen queries: one paired series per strategy, its "
                            "significant changes marked, what changed since the previous run on each point.")
if suite != NO_SUITE:
    info = summary(store.get_suite(suite))
    # A suite's runs are tested on the suite's own metric: the chart shows that one, and says so.
    shown, suite_k = metric_parts(info.metric)
    why = ("The suite's metric: its regression test (and so its markers) is on it. Another metric needs "
           "another suite (`searchgrade suite create NAME --from RUN --metric ndcg@10`).")
    one.selectbox("Metric", [shown], key="trends_suite_metric", disabled=True, help=why)
    two.selectbox("k", [suite_k if suite_k is not None else "the run's k"], key="trends_suite_k", disabled=True,
                  help=why)
    st.caption(plain(f"Suite {suite}: {info.collection}, {info.queries} frozen queries; each run compared with "
                     f"the previous complete one on {metric_words(info.metric)} (margin {info.margin:g}), adjusted over the "
                     "strategies. Times are UTC."))
    points = suite_trend(store, suite)
    if points.empty:
        st.info(plain(f"No complete run of suite {suite} yet."))
    else:
        suite_trend_chart(points, suite, info.metric, key="trends_suite_chart")
    st.markdown("**Runs of the suite: significant changes, what changed since the previous run, notes**")
    # What changed and the note first: here the question is why the line moved.
    st.dataframe(suite_runs_table(store, suite), hide_index=True, key="trends_suite_runs",
                 column_order=["created (UTC)", "what changed", "note", "significant changes", "status", "run",
                               "trigger"])
    glossary([parse_metric(info.metric).key], suite_k)
    st.stop()
# The metrics every run shown supports (no "highly relevant" share when a run has binary labels).
shown_runs = [store.get_run(r.run_id) for r in runs if collection == ALL or r.collection_name == collection]
metrics = metric_names(*shown_runs)
if st.session_state.get("trends_metric") not in metrics:
    st.session_state["trends_metric"] = PRIMARY_METRIC
metric = one.selectbox("Metric", metrics, format_func=METRIC_LABELS.get, key="trends_metric",
                       help="The metrics every run shown supports; the glossary at the foot of the page defines each.")
if st.session_state.get("trends_k") not in cutoffs:
    st.session_state["trends_k"] = PRIMARY_K if PRIMARY_K in cutoffs else cutoffs[-1]
k = two.selectbox("k", cutoffs, key="trends_k")
frame = trend(home(), metric, k, None if collection == ALL else collection, runs_key)
name = metric_label(metric, k)
if frame.empty:
    st.info(f"No complete run stored {name}.")
    st.stop()


def _numbers(values: pd.Series) -> list[float | None]:
    # None, not NaN: Plotly breaks a line at None (NaN is not JSON).
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in values]


series = trend_series(frame)
figure = go.Figure()
for line in series:
    points = line.points
    label = chart_text(line.name)
    group = f"{line.collection}/{line.strategy}"
    x = [t.isoformat() for t in points["created_at"]]
    value, low, high = _numbers(points["value"]), _numbers(points["ci_low"]), _numbers(points["ci_high"])
    # The CI band: the upper edge, then the lower edge filled up to it.
    figure.add_scatter(x=x, y=high, mode="lines", line={"width": 0}, hoverinfo="skip", connectgaps=False,
                       showlegend=False, legendgroup=group, name=f"{label} CI high")
    figure.add_scatter(x=x, y=low, mode="lines", line={"width": 0}, fill="tonexty", connectgaps=False,
                       fillcolor=band_color(line.strategy), hoverinfo="skip", showlegend=False, legendgroup=group,
                       name=f"{label} CI low")
    # Error bars too, so a single run (no band to draw) still shows its interval.
    figure.add_scatter(x=x, y=value, mode="lines+markers", name=label, legendgroup=group, connectgaps=False,
                       line={"color": strategy_color(line.strategy),
                             "dash": "solid" if line.collection == series[0].collection else "dot"},
                       error_y={"type": "data", "array": [None if h is None else h - v for h, v in zip(high, value, strict=True)],
                                "arrayminus": [None if lo is None else v - lo for v, lo in zip(value, low, strict=True)],
                                "thickness": 1, "width": 3},
                       customdata=[[chart_text(n or ""), lo, hi] for n, lo, hi in zip(
                           points["name"], low, high, strict=True)],
                       hovertemplate=("%{customdata[0]}<br>" + label + ": %{y:.3f} (95% CI "
                                      "%{customdata[1]:.3f} to %{customdata[2]:.3f})<extra></extra>"))
times = frame["created_at"]
if times.nunique() == 1:
    # One run: a day around it, rather than an axis zoomed to milliseconds.
    figure.update_xaxes(range=[(times.iloc[0] - pd.Timedelta(hours=12)).isoformat(),
                               (times.iloc[0] + pd.Timedelta(hours=12)).isoformat()])
figure.update_layout(yaxis_title=name, xaxis_title="Run date", height=460, margin={"t": 30},
                     legend={"title": {"text": "Strategy" + (" · collection" if collection == ALL else "")}},
                     meta={"chart": "trend", "metric": name})
st.plotly_chart(figure, key="trends_chart")
breaks = max((line.query_set_breaks for line in series), default=0)
notes = ["Bands: 95% confidence intervals over each run's queries.",
         "A line joins runs of one collection on one query set only: it breaks where the strategy did not "
         "run and where the query set changed"
         + (f" ({breaks} time{'s' if breaks != 1 else ''} here)." if breaks else ".")]
if collection == ALL:
    notes.append("Collections are not comparable with each other: each has its own series (dotted after the "
                 "first).")
notes.append("Runs are not paired here: use Compare for a paired test of two runs"
             + (f", or pick a suite ({', '.join(suites)}): its runs are one paired series." if suites else "."))
st.caption(plain(" ".join(notes)))
table = trend_table(frame)
numbers = [c for c in table.columns if c not in ("Date", "Run", "Collection")]
# A strategy that did not run in a run is said so, not "None"; three decimals; the date to the minute.
shown = table.assign(Date=table["Date"].map(lambda t: f"{t:%Y-%m-%d %H:%M}"),
                     **{c: ["not run" if pd.isna(v) else f"{v:.3f}" for v in table[c]] for c in numbers})
st.dataframe(shown, hide_index=True, key="trends_table",
             column_config={c: st.column_config.TextColumn(c, help=f"{name}; 'not run': the strategy did not run "
                                                                    "in that run") for c in numbers})
runs_coverage(tuple(frame["run_id"].unique()), k, "trends_coverage")
glossary(metrics, k)
