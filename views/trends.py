"""Trends: one metric across runs over time, per strategy, with 95% CI bands."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine.report.common import (
    METRIC_LABELS,
    PRIMARY_K,
    PRIMARY_METRIC,
    metric_label,
    metric_names,
)
from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.views._colors import strategy_color
from searchgrade.views._common import chart_text, home, run_choices, trend, trend_cutoffs

st.session_state.setdefault("trends_metric", PRIMARY_METRIC)
st.session_state.setdefault("trends_collection", "All collections")

st.title("Trends")
runs = run_choices(complete_only=True)
if not runs:
    st.info("No complete run yet. Start one on the Evaluate page.")
    st.stop()
runs_key = tuple(r.run_id for r in runs)
cutoffs = trend_cutoffs(home(), runs_key)
collections = ["All collections", *sorted({r.collection_name for r in runs})]
one, two, three = st.columns(3)
metric = one.selectbox("Metric", metric_names(), format_func=METRIC_LABELS.get, key="trends_metric")
if st.session_state.get("trends_k") not in cutoffs:
    st.session_state["trends_k"] = PRIMARY_K if PRIMARY_K in cutoffs else cutoffs[-1]
k = two.selectbox("k", cutoffs, key="trends_k")
if st.session_state["trends_collection"] not in collections:
    st.session_state["trends_collection"] = collections[0]
collection = three.selectbox("Collection", collections, key="trends_collection")
frame = trend(home(), metric, k, None if collection == collections[0] else collection, runs_key)
name = metric_label(metric, k)
if frame.empty:
    st.info(f"No complete run stored {name}.")
    st.stop()

figure = go.Figure()
for strategy, rows in frame.groupby("strategy", sort=False):
    color = strategy_color(strategy) or "#888888"
    band = "rgba({}, {}, {}, 0.18)".format(*(int(color[i:i + 2], 16) for i in (1, 3, 5)))
    label = chart_text(strategy_label(strategy))
    x = [t.isoformat() for t in rows["created_at"]]
    value, low, high = rows["value"].tolist(), rows["ci_low"].tolist(), rows["ci_high"].tolist()
    # The CI band: the upper edge, then the lower edge filled up to it.
    figure.add_scatter(x=x, y=high, mode="lines", line={"width": 0}, hoverinfo="skip",
                       showlegend=False, legendgroup=strategy, name=f"{label} CI high")
    figure.add_scatter(x=x, y=low, mode="lines", line={"width": 0}, fill="tonexty", fillcolor=band,
                       hoverinfo="skip", showlegend=False, legendgroup=strategy, name=f"{label} CI low")
    # Error bars too, so a single run (no band to draw) still shows its interval.
    figure.add_scatter(x=x, y=value, mode="lines+markers", name=label, legendgroup=strategy,
                       line={"color": color},
                       error_y={"type": "data", "array": [h - v for h, v in zip(high, value, strict=True)],
                                "arrayminus": [v - lo for v, lo in zip(value, low, strict=True)],
                                "thickness": 1, "width": 3},
                       customdata=[[chart_text(n), lo, hi] for n, lo, hi in zip(
                           rows["name"], rows["ci_low"], rows["ci_high"], strict=True)],
                       hovertemplate=("%{customdata[0]}<br>" + label + ": %{y:.3f} (95% CI "
                                      "%{customdata[1]:.3f} to %{customdata[2]:.3f})<extra></extra>"))
times = frame["created_at"]
if times.nunique() == 1:
    # One run: a day around it, rather than an axis zoomed to milliseconds.
    figure.update_xaxes(range=[(times.iloc[0] - pd.Timedelta(hours=12)).isoformat(),
                               (times.iloc[0] + pd.Timedelta(hours=12)).isoformat()])
figure.update_layout(yaxis_title=name, xaxis_title="Run date", height=460, margin={"t": 30},
                     meta={"chart": "trend", "metric": name})
st.plotly_chart(figure, key="trends_chart")
st.caption("Bands: 95% confidence intervals over each run's queries. Runs on different query sets "
           "are not paired here: use Compare for a paired test.")
table = frame.pivot_table(index=["created_at", "name"], columns="label", values="value").reset_index()
st.dataframe(table.rename(columns={"created_at": "Date", "name": "Run"}), hide_index=True)
