"""Holes in the judgments where decisions are made (viewmodels/holes.py): on Results, judged@k
beside the metric with the warning, the condensed NDCG and the RBP residual when strategies are
judged unevenly; on Compare, a change whose sign flips between NDCG and the condensed NDCG."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from searchgrade.viewmodels import holes as holes_model
from searchgrade.viewmodels import review as review_model
from searchgrade.views._common import home, plain, store_for


@st.cache_data(show_spinner=False, max_entries=64)
def _panel(path: str, run_id: str, metric: str, k: int) -> holes_model.HolesPanel:
    return holes_model.holes_panel(store_for(path), run_id, metric, k)


@st.cache_data(show_spinner=False, max_entries=64)
def _compare(path: str, run_a: str, run_b: str, k: int) -> holes_model.CompareHoles:
    return holes_model.compare_holes(store_for(path), run_a, run_b, k)


def results_holes(run_id: str, metric: str, k: int) -> None:
    """Judged@k beside metric@k per strategy; the warning and what tells worse from unjudged when
    the strategies' judged@k differ by more than the gap. Nothing when every result is judged."""
    panel = _panel(home(), run_id, metric, k)
    if not panel.rows or (panel.warning is None and all(r.judged >= 1.0 for r in panel.rows)):
        return
    if panel.warning:
        st.warning(plain(panel.warning), icon=":material/visibility_off:")
    metric_label = holes_model.metric_label(panel.metric, k)
    condensed = holes_model.metric_label("ndcg_judged", k)
    frame = pd.DataFrame([{"Strategy": r.label, metric_label: r.metric.value, f"Judged@{k}": r.judged,
                           condensed: r.condensed.value, f"bpref@{k}": r.bpref, f"RBP@{k}": r.rbp,
                           "RBP residual": r.residual}
                          for r in panel.rows])
    with st.expander(f"How complete are the judgments? (judged@{k} per strategy)", expanded=bool(panel.warning)):
        st.caption(plain(f"Judged@{k}: the share of each strategy's top {k} with a grade; an unjudged result "
                         f"counts as not relevant in {metric_label}. {condensed}: NDCG over the judged results "
                         "only (the holes removed before the cut). bpref: how often a relevant result is ranked "
                         "above the judged non-relevant ones, unjudged ones skipped. RBP residual: how much RBP "
                         "could still rise if every hole were relevant. See docs/metrics.md."))
        st.dataframe(frame, hide_index=True, key="results_holes",
                     column_config={c: st.column_config.NumberColumn(format="%.3f") for c in frame.columns[1:]})


def compare_flips(run_a: str, run_b: str, k: int) -> None:
    """A warning per strategy whose change from run A to run B flips sign on the judged results."""
    for sentence in _compare(home(), run_a, run_b, k).sentences():
        st.warning(plain(sentence), icon=":material/swap_vert:")



@st.cache_data(show_spinner=False, max_entries=64)
def _fill_holes(path: str, run_id: str, k: int) -> tuple[list[str], int]:
    return review_model.fill_holes_summary(store_for(path), run_id, k)


def fill_holes_summary(run_id: str, k: int) -> int:
    """Review's "fill the holes": which comparisons the holes could reverse and how many pairs settle
    them; returns that count (the queue's default size)."""
    lines, settle = _fill_holes(home(), run_id, k)
    for line in lines:
        st.caption(plain(line))
    return settle
