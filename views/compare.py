"""Compare two runs: per-strategy deltas with paired tests, what differs between the runs, and the
queries that changed most."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.metrics import higher_is_better
from searchgrade.viewmodels.common import (
    METRIC_LABELS,
    PRIMARY_K,
    PRIMARY_METRIC,
    metric_label,
    metric_names,
)
from searchgrade.viewmodels.compare import default_pair
from searchgrade.viewmodels.metric_help import metric_explained
from searchgrade.views._common import (
    chart_text,
    compare_runs,
    get_store,
    glossary,
    home,
    plain,
    public,
    run_choices,
)
from searchgrade.views._holes import compare_flips
from searchgrade.views._traffic import runs_coverage

BETTER, WORSE, WITHHELD = "#2a8a3e", "#c0392b", "#b0b0b0"

st.session_state.setdefault("compare_metric", PRIMARY_METRIC)

st.title("Compare two runs")
runs = run_choices(complete_only=True)
if len(runs) < 2:
    st.info("Comparing needs two complete runs; there are "
            f"{len(runs)}. Start another on the Evaluate page.")
    st.stop()
ids = [r.run_id for r in runs]
labels = {r.run_id: r.label for r in runs}
# The newest run against the one before it on the same collection: a pair that can be compared.
for key, default in zip(("compare_a", "compare_b"), default_pair([(r.run_id, r.collection_name) for r in runs]),
                        strict=True):
    if st.session_state.get(key) not in ids:
        st.session_state[key] = default
one, two = st.columns(2)
run_a = one.selectbox("Run A (before)", ids, format_func=labels.get, key="compare_a")
run_b = two.selectbox("Run B (after)", ids, format_func=labels.get, key="compare_b")
if run_a == run_b:
    st.info("Pick two different runs.")
    st.stop()
records = [get_store().get_run(run_a), get_store().get_run(run_b)]
# The metrics both runs' labels support (no diagnostic: no verdict is made on one), and k as on
# Results: a dropdown of the cut-offs both runs kept.
metrics = metric_names(*records)
if st.session_state.get("compare_metric") not in metrics:
    st.session_state["compare_metric"] = PRIMARY_METRIC
cutoffs = list(range(1, min(r.depth for r in records) + 1))
if st.session_state.get("compare_k") not in cutoffs:
    st.session_state["compare_k"] = min(PRIMARY_K, cutoffs[-1])
three, four, _ = st.columns([2, 1, 3])
metric = three.selectbox("Metric", metrics, format_func=METRIC_LABELS.get, key="compare_metric",
                         help="The metrics both runs' labels support; the glossary at the foot of the page "
                              "defines each.")
k = four.selectbox("k", cutoffs, key="compare_k")
st.caption(plain(f"{metric_label(metric, int(k))}: {metric_explained(metric, int(k), records[1])}"))
try:
    result = compare_runs(home(), run_a, run_b, metric, int(k))
except SearchGradeError as exc:
    st.error(plain(str(exc)))
    st.stop()
name = metric_label(metric, int(k))
for note in result.notes:
    st.caption(plain(note))
for side, names in (("run A", result.only_in_a), ("run B", result.only_in_b)):
    if names:
        st.warning(plain(f"Only in {side}, so not compared: {', '.join(names)}."), icon=":material/call_split:")
if not result.settings.empty:
    with st.expander(f"What differs between the two runs ({len(result.settings)} settings)"):
        st.dataframe(result.settings.map(lambda v: public(str(v)).replace("\\", "")), hide_index=True,
                     key="compare_settings")
if result.refusal is not None:
    st.warning(plain(result.refusal))
    st.stop()

# The verdicts first, in words, then the chart drawn to scale.
st.subheader(f"Change in {name}, run B minus run A ({result.n_shared} shared queries)")
show = {"good": st.success, "warn": st.warning, "info": st.info}
for sentence in result.findings:
    show[sentence.kind](plain(sentence.text))
compare_flips(run_a, run_b, int(k))
runs_coverage((run_a, run_b), int(k), "compare_coverage")
st.caption("Queries paired by " + ("their id (the collection's own queries)" if result.paired_on == "query_id"
                                   else "their text (generated query ids name different questions in "
                                        "different runs)"))
deltas = result.deltas
figure = go.Figure()
low, high = result.axis_range
figure.add_bar(x=[chart_text(s) for s in deltas["Strategy"]], y=deltas["Change"].tolist(),
               error_y={"type": "data", "array": (deltas["CI high"] - deltas["Change"]).tolist(),
                        "arrayminus": (deltas["Change"] - deltas["CI low"]).tolist()},
               # A change the holes withhold is no verdict: grey, and labelled so.
               marker_color=[WITHHELD if v == "withheld" else BETTER if (c > 0) == higher_is_better(metric) else WORSE
                             for c, v in zip(deltas["Change"], deltas["Verdict"], strict=True)],
               text=[f"{c:+.3f}" + (" (withheld)" if v == "withheld" else "")
                     for c, v in zip(deltas["Change"], deltas["Verdict"], strict=True)], textposition="outside",
               customdata=deltas[["CI low", "CI high"]].values.tolist(), name="Change",
               hovertemplate="%{x}: %{y:+.3f} (interval %{customdata[0]:+.3f} to %{customdata[1]:+.3f})"
                             "<extra></extra>")
figure.update_layout(yaxis_title=f"Δ {name}", height=360, margin={"t": 20},
                     yaxis={"range": [low, high], "zeroline": True, "zerolinewidth": 2, "tickformat": "+.3f"},
                     meta={"chart": "compare", "metric": name, "range": [low, high]})
st.plotly_chart(figure, key="compare_chart")
st.caption(plain(f"The axis is symmetric around no change and spans at least ±{high:.3f}: a bar's length "
                 "is its change to scale. Green: better, red: worse, grey: withheld (too few results judged); "
                 "whiskers: the adjusted interval."))
if result.statistics_note:
    st.caption(result.statistics_note)
fmt = {c: st.column_config.NumberColumn(format="%.3f") for c in ("Run A", "Run B")}
fmt.update({c: st.column_config.NumberColumn(format="%+.3f") for c in ("Change", "CI low", "CI high")})
fmt["p-value"] = st.column_config.NumberColumn(format="%.3f", help="adjusted for the strategies compared")
# A withheld change has no interval, p-value or family: a dash, not "None".
shown = deltas.drop(columns="strategy")
for column, form in (("CI low", "{:+.3f}"), ("CI high", "{:+.3f}"), ("p-value", "{:.3f}"), ("Comparisons", "{:.0f}")):
    shown[column] = ["–" if pd.isna(v) else form.format(v) for v in shown[column]]
    fmt[column] = st.column_config.TextColumn(alignment="right", help=fmt.get(column, {}).get("help"))
st.dataframe(shown, hide_index=True, column_config=fmt)
st.subheader("Queries that changed most")
if result.changed.empty:
    st.info(f"No query changed: every shared query has the same {name} in both runs.")
else:
    st.dataframe(result.changed, hide_index=True, column_config=fmt)
glossary(metrics, int(k), records[1])
