"""Quality against cost on Results (viewmodels/variants.py): the page's metric drawn against a cost
the reader picks, the strategies no other beats on both joined, and every cost figure in a table."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from searchgrade.viewmodels import variants as variants_model
from searchgrade.viewmodels.ann_index import variant_index_lines
from searchgrade.viewmodels.results_view import ResultsView
from searchgrade.views._colors import strategy_colors
from searchgrade.views._common import chart_text, home, plain, store_for


def quality_cost_section(view: ResultsView) -> None:
    """The section: nothing for a run made before cost figures were recorded."""
    # Read from what the page has already (the run's stats, its latency summary): nothing to cache.
    found = variants_model.quality_cost(store_for(home()), view.run, view.metric_summary, view.metric, view.k,
                                        st.session_state.get("results_cost_axis", "p50_ms"),
                                        view.latency.to_dict("records"))
    if found is None or found.points["cost"].notna().sum() < 1:
        return
    st.subheader(f"Quality and cost: {found.name} against what each strategy costs")
    if st.session_state.get("results_cost_axis") not in found.axes:
        st.session_state["results_cost_axis"] = found.axis
    left, _ = st.columns([2, 3])
    left.selectbox("Cost", list(found.axes), format_func=found.axes.get, key="results_cost_axis")
    points = found.points.dropna(subset=["cost"])
    bytes_axis = found.axis == "index_bytes"
    scale = 1e6 if bytes_axis else 1.0
    colors = strategy_colors(points["strategy"])
    figure = go.Figure()
    front = points[~points["dominated"]].sort_values("cost")
    figure.add_scatter(x=(front["cost"] / scale).tolist(), y=front["value"].tolist(), mode="lines",
                       line={"dash": "dot", "color": "#999999"}, name="not dominated", hoverinfo="skip",
                       showlegend=False)
    for row in points.itertuples():
        figure.add_scatter(
            x=[row.cost / scale], y=[row.value], mode="markers", name=chart_text(row.label),
            marker={"size": 13, "color": colors[row.strategy], "symbol": "circle-open" if row.dominated else "circle",
                    "line": {"width": 2, "color": colors[row.strategy]}},
            error_y={"type": "data", "array": [row.ci_high - row.value], "arrayminus": [row.value - row.ci_low]},
            customdata=[[chart_text(row.settings), row.ci_low, row.ci_high,
                         chart_text(f"dominated by {row.dominated_by}") if row.dominated else "not dominated"]],
            hovertemplate=f"{chart_text(row.label)} (%{{customdata[0]}}): %{{y:.3f}} (95% CI %{{customdata[1]:.3f}} to "
                          f"%{{customdata[2]:.3f}}), {chart_text(found.axes[found.axis])} %{{x:.3g}}; "
                          "%{customdata[3]}<extra></extra>")
    costs = (points["cost"] / scale).tolist()
    wide = min(costs) > 0 and max(costs) / min(costs) > 20  # latencies from 0.1 ms to 100 ms: a log axis
    # The names in a legend beside the chart: written on the points, close ones would overlap.
    # A log axis labelled 1-2-5 in plain numbers (plotly's own log labels are bare digits: 0.3 reads "3").
    ticks = [v for e in range(math.floor(math.log10(min(costs))), math.ceil(math.log10(max(costs))) + 1)
             for v in (10.0 ** e, 2 * 10.0 ** e, 5 * 10.0 ** e)] if wide else []
    axis = {"type": "log", "tickvals": ticks, "ticktext": [f"{v:g}" for v in ticks]} if wide else {"type": "linear"}
    figure.update_layout(xaxis_title=found.axes[found.axis], yaxis_title=found.name, height=440,
                         margin={"t": 30}, xaxis=axis,
                         legend={"title": {"text": "Strategy (hollow: dominated)"}},
                         meta={"chart": "quality_cost", "axis": found.axis, "metric": found.name})
    st.plotly_chart(figure, key="results_quality_cost_chart")
    dominated = found.dominated
    st.caption(plain(
        "Each point is a strategy, its 95% CI drawn through it; filled points are not dominated (no other strategy "
        "is at least as good and as cheap), joined by the dotted line; a hollow one is dominated"
        + (f": {', '.join(dominated)}." if dominated else " (none here).")
        + " Dominated is read on the point estimates: the paired tests above say which differences are real."))
    for line in variant_index_lines(view.run.stats):  # an approximate index costs quality: said beside the chart
        st.caption(plain(line))
    number = {c: st.column_config.NumberColumn(format="%.3f") for c in (found.name,)}
    number.update({c: st.column_config.NumberColumn(format="%.1f") for c in ("Query p50 (ms)", "Query p95 (ms)")})
    number.update({"Index build (s)": st.column_config.NumberColumn(format="%.2f"),
                   "Embedded per s": st.column_config.NumberColumn(
                       format="%.0f", help="Items (documents or chunks) embedded per second of encoding in this run, "
                                           "the model's load excluded; empty when every vector came from the cache"),
                   "Index (MB)": st.column_config.NumberColumn(format="%.2f"),
                   "Chunks per doc": st.column_config.NumberColumn(format="%.2f")})
    with st.expander("Every cost figure per strategy"):
        st.dataframe(found.table, hide_index=True, key="results_costs_table", column_config=number)
        st.caption(plain("Index build: seconds this run spent making the strategy's indexes ready (cutting chunks, "
                         "embedding what the cache lacked, building or reloading), its inputs' included, the model's "
                         "load not. Query latency: the run's per-query latency (the strategy on its own)."))

