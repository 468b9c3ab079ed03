"""The Results page's metrics by kind of generated query: natural language vs keyword, and by how
many of its terms a query shares with its source document."""

from __future__ import annotations

import streamlit as st

from searchgrade.engine.store import RunRecord
from searchgrade.viewmodels import query_slices as slices_model
from searchgrade.viewmodels.common import metric_label
from searchgrade.views._common import home, plain, store_for

SHOW = {"good": st.success, "warn": st.warning, "info": st.info}


@st.cache_data(show_spinner=False, max_entries=32)
def query_slices(path: str, run_id: str, metric: str, k: int) -> slices_model.QuerySlices | None:
    return slices_model.query_slices(store_for(path), run_id, metric, k)


def query_slices_section(run: RunRecord, metric: str, k: int) -> None:
    slices = query_slices(home(), run.run_id, metric, k)
    if slices is None:
        return
    name = metric_label(metric, k)
    st.subheader(f"{name} by kind of generated query")
    st.caption("Queries an LLM wrote from a document: natural-language questions vs keyword queries, and by "
               "the share of the query's terms found in its source document. A strategy that leads only "
               "on high-overlap queries may lead only because the queries copy the document's words.")
    for sentence in slices.sentences:
        SHOW[sentence.kind](plain(sentence.text))
    rows = slices.rows
    if rows.empty:
        return
    cells = rows.assign(cell=[f"{v:.3f} ({lo:.3f}–{hi:.3f}), {n} q" for v, lo, hi, n in
                              rows[["value", "ci_low", "ci_high", "n"]].itertuples(index=False)])
    table = cells.pivot_table(index=["Slice kind", "Slice"], columns="Strategy", values="cell",
                              aggfunc="first", sort=False)
    st.dataframe(table.reset_index().drop(columns="Slice kind"), hide_index=True, key="results_query_slices")
    st.caption("Each cell: mean (95% bootstrap CI), number of queries.")
    summary = slices.overlap_summary
    if not summary.empty and summary["Mean term overlap"].notna().any():
        st.dataframe(summary, hide_index=True, key="results_query_overlap",
                     column_config={"Mean term overlap": st.column_config.NumberColumn(format="percent"),
                                    "Mean longest shared span": st.column_config.NumberColumn(format="%.1f")})
    elif not summary.empty:
        st.caption("This run stored no overlap figures (it predates them): evaluate again to see the bands.")
