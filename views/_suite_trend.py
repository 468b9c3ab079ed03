"""A suite's trend chart: its runs as one paired series per strategy, a marker on each significant
change (a triangle down: a drop; up: a gain) and, on hover, the point's words (its change, what
changed in the configuration, its note). Drawn on the Suites page and on Trends when a suite is
picked, from ``viewmodels.suites.suite_trend``."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.viewmodels.suites import metric_words
from searchgrade.views._colors import strategy_colors
from searchgrade.views._common import chart_text

#: verdict -> (marker symbol, colour).
MARKERS = {"drop": ("triangle-down", "#c0392b"), "gain": ("triangle-up", "#1e8449")}


def suite_trend_chart(trend: pd.DataFrame, suite: str, metric: str, key: str) -> None:
    """Draw ``trend`` (``suite_trend``'s rows) with its caption; meta chart "suite_trend"; the
    suite's metric ("dcg@10") is said by its name on the pages ("DCG@10")."""
    metric = metric_words(metric)
    figure = go.Figure()
    colors = strategy_colors(trend["strategy"])
    for strategy, rows in trend.groupby("strategy", sort=False):
        label = chart_text(strategy_label(strategy))
        x = [t.isoformat() for t in rows["created_at"]]
        figure.add_scatter(x=x, y=rows["value"].tolist(), mode="lines+markers", name=label,
                           line={"color": colors[strategy]},
                           error_y={"type": "data", "array": (rows["ci_high"] - rows["value"]).tolist(),
                                    "arrayminus": (rows["value"] - rows["ci_low"]).tolist()},
                           text=[chart_text(said) for said in rows["said"]],
                           hovertemplate="%{y:.3f}<br>%{text}<extra>" + label + "</extra>")
        for verdict, (symbol, mark) in MARKERS.items():
            marked = rows[rows["verdict"] == verdict]
            if not marked.empty:
                figure.add_scatter(x=[t.isoformat() for t in marked["created_at"]], y=marked["value"].tolist(),
                                   mode="markers", name=f"{label}: significant {verdict}",
                                   marker={"symbol": symbol, "size": 16, "color": mark},
                                   text=[chart_text(said) for said in marked["said"]],
                                   hovertemplate="%{y:.3f}<br>%{text}<extra>" + label + "</extra>")
    times = trend["created_at"]
    if times.nunique() == 1:
        # One run: a day around it, rather than an axis that ticks in fractions of a millisecond.
        figure.update_xaxes(range=[(times.iloc[0] - pd.Timedelta(hours=12)).isoformat(),
                                   (times.iloc[0] + pd.Timedelta(hours=12)).isoformat()])
    figure.update_layout(title=f"{metric} per run of suite {chart_text(suite)} (paired: the same queries)",
                         xaxis_title="run (UTC)", yaxis_title=metric, height=420,
                         meta={"chart": "suite_trend", "suite": suite, "metric": metric})
    st.plotly_chart(figure, key=key)
    st.caption("Each run is compared with the suite's previous complete run as Compare and the gate compare "
               "them (paired per query, 10,000 resamples); a marker is a significant change larger than the "
               "suite's margin (a triangle down: a drop, which alerts; up: a gain). Hover a point for what "
               "changed since the previous run and its note.")
