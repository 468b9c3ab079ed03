"""Compare two runs: per-strategy deltas with paired tests, and the queries that changed most."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.report.common import (
    METRIC_LABELS,
    PRIMARY_K,
    PRIMARY_METRIC,
    metric_label,
    metric_names,
)
from searchgrade.engine.run.scoring import higher_is_better
from searchgrade.views._common import chart_text, compare_runs, home, plain, run_choices

st.session_state.setdefault("compare_metric", PRIMARY_METRIC)

st.title("Compare two runs")
runs = run_choices(complete_only=True)
if len(runs) < 2:
    st.info("Comparing needs two complete runs; there are "
            f"{len(runs)}. Start another on the Evaluate page.")
    st.stop()
ids = [r.run_id for r in runs]
labels = {r.run_id: r.label for r in runs}
for key, default in (("compare_a", ids[1]), ("compare_b", ids[0])):
    if st.session_state.get(key) not in ids:
        st.session_state[key] = default
one, two = st.columns(2)
run_a = one.selectbox("Run A (before)", ids, format_func=labels.get, key="compare_a")
run_b = two.selectbox("Run B (after)", ids, format_func=labels.get, key="compare_b")
three, four, _ = st.columns([2, 1, 3])
metric = three.selectbox("Metric", metric_names(), format_func=METRIC_LABELS.get,
                         key="compare_metric")
k = four.number_input("k", 1, 1000, PRIMARY_K, key="compare_k")
if run_a == run_b:
    st.info("Pick two different runs.")
    st.stop()
try:
    result = compare_runs(home(), run_a, run_b, metric, int(k))
except SearchGradeError as exc:
    st.error(plain(str(exc)))
    st.stop()
name = metric_label(metric, int(k))
for note in result.notes:
    st.caption(plain(note))
if result.refusal is not None:
    st.warning(plain(result.refusal))
    st.stop()
st.subheader(f"Change in {name}, run B minus run A ({result.n_shared} shared queries)")
st.caption("Queries paired by " + ("their id (the collection's own queries)" if result.paired_on == "query_id"
                                   else "their text (generated query ids name different questions in "
                                        "different runs)"))
deltas = result.deltas
figure = go.Figure()
figure.add_bar(x=[chart_text(s) for s in deltas["Strategy"]], y=deltas["Change"].tolist(),
               error_y={"type": "data", "array": (deltas["CI high"] - deltas["Change"]).tolist(),
                        "arrayminus": (deltas["Change"] - deltas["CI low"]).tolist()},
               marker_color=["#2a8a3e" if (c > 0) == higher_is_better(metric) else "#c0392b"
                             for c in deltas["Change"]],
               text=[f"{c:+.2f}" for c in deltas["Change"]])
figure.update_layout(yaxis_title=f"Δ {name}", height=340, margin={"t": 20}, meta={"chart": "compare"})
st.plotly_chart(figure, key="compare_chart")
for sentence in result.findings:
    st.write(plain(sentence.text))
if result.statistics_note:
    st.caption(result.statistics_note)
fmt = {c: st.column_config.NumberColumn(format="%.3f") for c in ("Run A", "Run B")}
fmt.update({c: st.column_config.NumberColumn(format="%+.3f") for c in ("Change", "CI low", "CI high")})
fmt["p-value"] = st.column_config.NumberColumn(format="%.3f", help="adjusted for the strategies compared")
st.dataframe(deltas.drop(columns="strategy"), hide_index=True, column_config=fmt)
st.subheader("Queries that changed most")
st.dataframe(result.changed, hide_index=True, column_config=fmt)
