"""Results panels for strategies that overlap or fail (engine/report/result_overlap.py), kept apart from
the page's own sections: which strategies find the same documents, and backend problems."""

from __future__ import annotations

import streamlit as st

from searchgrade.engine.report import result_overlap as overlap_model
from searchgrade.views._common import home, plain, store_for


@st.cache_data(show_spinner=False, max_entries=32)
def _view(path: str, run_id: str) -> overlap_model.OverlapView:
    """The run's overlap view model, cached per run (not per metric and k, which it does not use)."""
    return overlap_model.overlap_view(store_for(path), run_id)


def search_problems(run_id: str) -> None:
    """A warning per strategy that failed on queries or returned ids outside the collection."""
    for line in _view(home(), run_id).problems:
        st.warning(plain(line))


def overlap_table(run_id: str) -> None:
    """Each pair of strategies' top-10 overlap, beside the quality figures."""
    frame = _view(home(), run_id).overlap
    if frame.empty:
        return
    k = overlap_model.OVERLAP_K
    with st.expander(f"Do the strategies find the same documents? (top-{k} overlap per pair)"):
        st.caption(f"Strategies that return the same documents are not twice the evidence. Jaccard@{k}: "
                   f"shared share of the two top-{k} sets; RBO@{k}: rank-biased overlap (p = "
                   f"{overlap_model.RBO_P}), which weighs agreement at the top most. 1 = the same "
                   "lists; means over the queries both answered.")
        st.dataframe(frame.drop(columns=["strategy", "other"]), hide_index=True, key="results_overlap",
                     column_config={c: st.column_config.NumberColumn(format="%.2f")
                                    for c in (f"Jaccard@{k}", f"RBO@{k}")})
