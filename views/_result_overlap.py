"""Results panels for strategies that overlap or fail (viewmodels/result_overlap.py), kept apart from
the page's own sections: which strategies find the same documents, and backend problems."""

from __future__ import annotations

import streamlit as st

from searchgrade.viewmodels import result_overlap as overlap_model
from searchgrade.views._common import home, plain, store_for


@st.cache_data(show_spinner=False, max_entries=32)
def _view(path: str, run_id: str, k: int) -> overlap_model.OverlapView:
    """The run's overlap view model at the page's k, cached per run and k (not per metric, which it
    does not use)."""
    return overlap_model.overlap_view(store_for(path), run_id, k)


def search_problems(run_id: str) -> None:
    """A warning per strategy that failed on queries or returned ids outside the collection."""
    for line in _view(home(), run_id, overlap_model.OVERLAP_K).problems:
        st.warning(plain(line))


def overlap_table(run_id: str, k: int) -> None:
    """Each pair of strategies' top-k overlap at the page's k, beside the quality figures."""
    frame = _view(home(), run_id, k).overlap
    if frame.empty:
        return
    jaccard, rbo = [c for c in frame.columns if c.startswith(("Jaccard@", "RBO@"))]
    shown_k = jaccard.split("@")[1]
    with st.expander(f"Do the strategies find the same documents? (top-{shown_k} overlap per pair)"):
        st.caption(f"Strategies that return the same documents are not twice the evidence. {jaccard}: "
                   f"shared share of the two top-{shown_k} sets; {rbo}: rank-biased overlap (p = "
                   f"{overlap_model.RBO_P}), which weighs agreement at the top most. 1 = the same "
                   "lists; means over the queries both answered.")
        st.dataframe(frame.drop(columns=["strategy", "other"]), hide_index=True, key="results_overlap",
                     column_config={c: st.column_config.NumberColumn(
                         format="%.3f", help=GLOSSARY_HELP.get(c.split("@")[0])) for c in (jaccard, rbo)})


GLOSSARY_HELP = {
    "Jaccard": "Jaccard: the documents both top-k lists hold, over the documents either holds (1 = same set).",
    "RBO": f"Rank-biased overlap (p = {overlap_model.RBO_P}): how alike two rankings are, agreement at the "
           "top weighing most (1 = the same ranking).",
}
