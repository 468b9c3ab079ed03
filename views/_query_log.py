"""The Evaluate page's query log: a log in (an upload and its privacy floor), its head and tail, a
query set sampled by traffic, click events in, and whether to grade by clicks."""

from __future__ import annotations

from typing import Any

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.server.uploads import save_upload
from searchgrade.viewmodels import query_log as log_model
from searchgrade.views._common import get_store, home, plain


def _import_log(collection_name: str) -> None:
    upload = st.file_uploader("Query log (CSV, TSV, JSONL or Parquet: one row per search, one per query with a "
                              "count, or UBI queries)", type=["csv", "tsv", "jsonl", "parquet"],
                              key="evaluate_log_upload")
    one, two, three = st.columns(3)
    min_count = one.number_input("Drop queries seen fewer than N times", 1, 1_000_000, 1, key="evaluate_log_min_count",
                                 help="The privacy floor: such queries are dropped before anything is stored")
    min_users = two.number_input("... or by fewer than M users", 1, 1_000_000, 1, key="evaluate_log_min_users",
                                 help="Needs a user or session column in the log")
    if upload is not None and three.button("Import log", key="evaluate_log_import"):
        try:
            with st.spinner("Reading the log…"):
                saved = save_upload(upload.name, upload, home(), kind="queries")
                summary = log_model.import_uploaded_log(get_store(), saved.path, upload.name, home(),
                                                        collection_name=collection_name, min_count=int(min_count),
                                                        min_users=int(min_users))
        except SearchGradeError as exc:
            st.error(plain(exc.page_message))
            return
        st.session_state["evaluate_log_name"] = summary.log_name
        st.session_state["evaluate_log_notes"] = log_model.log_summary_lines(summary)


def query_log_section(collection_name: str) -> dict[str, Any]:
    """The form's query-log part; returns the RunConfig keywords it adds (empty: not used)."""
    # Here, not at import: a module runs once per process, a page once per session and rerun.
    for key, value in (("evaluate_log_use", False), ("evaluate_log_notes", [])):
        st.session_state.setdefault(key, value)
    with st.expander("Queries from a query log (optional)", expanded=st.session_state["evaluate_log_use"]):
        use = st.checkbox("Evaluate on queries sampled from a query log, weighted by traffic",
                          key="evaluate_log_use")
        if not use:
            return {}
        store = get_store()
        _import_log(collection_name)
        for line in st.session_state["evaluate_log_notes"]:
            st.caption(plain(line))
        logs = log_model.log_choices(store, collection_name)
        if not logs:
            st.caption("No query log stored yet: upload one above.")
            return {}
        names = [c.log_name for c in logs]
        if st.session_state.get("evaluate_log_name") not in names:
            st.session_state["evaluate_log_name"] = names[0]
        labels = {c.log_name: c.label for c in logs}
        log_name = st.selectbox("Query log", names, format_func=labels.get, key="evaluate_log_name")
        ends = log_model.preview(store, log_name)
        head, tail = st.columns(2)
        config = {"Share of searches": st.column_config.NumberColumn(format="percent")}
        head.markdown("**Head**: the most searched")
        head.dataframe(ends["head"], hide_index=True, column_config=config, key="evaluate_log_head")
        tail.markdown("**Tail**: the least searched")
        tail.dataframe(ends["tail"], hide_index=True, column_config=config, key="evaluate_log_tail")

        st.markdown("**Query set**")
        one, two, three = st.columns([3, 1, 1])
        method = one.selectbox("Sampling", list(log_model.METHOD_LABELS), format_func=log_model.METHOD_LABELS.get,
                               key="evaluate_log_method")
        size = two.number_input("Queries", 1, 100_000, 200, key="evaluate_log_size")
        seed = three.number_input("Seed", 0, 2**31 - 1, 0, key="evaluate_log_seed")
        if st.button("Sample a query set", key="evaluate_log_sample"):
            try:
                made = log_model.sample(store, log_name, method, int(size), int(seed))
            except SearchGradeError as exc:
                st.error(plain(exc.page_message))
            else:
                st.session_state["evaluate_log_set"] = made.set_name
                for note in made.notes:
                    st.caption(plain(f"Note: {note}"))
        sets = log_model.set_choices(store, log_name)
        if not sets:
            st.caption("No query set drawn from this log yet: sample one.")
            return {}
        if st.session_state.get("evaluate_log_set") not in sets:
            st.session_state["evaluate_log_set"] = next(iter(sets))
        query_set = st.selectbox("Evaluate on", list(sets), format_func=sets.get, key="evaluate_log_set")

        st.markdown("**Clicks**")
        events = st.file_uploader("Click events (UBI events JSONL, or a CSV of query_id, action, doc_id, position)",
                                  type=["csv", "tsv", "jsonl", "parquet"], key="evaluate_log_events")
        if events is not None and st.button("Import clicks", key="evaluate_log_import_events"):
            try:
                with st.spinner("Reading the events…"):
                    saved = save_upload(events.name, events, home(), kind="queries")
                    summary = log_model.import_uploaded_events(store, saved.path, home(), log_name)
            except SearchGradeError as exc:
                st.error(plain(exc.page_message))
            else:
                for line in summary.lines():
                    st.caption(plain(line[0].upper() + line[1:] + "."))
        has_clicks = next(c.has_clicks for c in log_model.log_choices(store, collection_name) if c.log_name == log_name)
        click_model = None
        if has_clicks and st.checkbox("Grade with the clicks (a click model; with the LLM judge too, the judge "
                                      "is measured against them)", key="evaluate_log_by_clicks"):
            models = log_model.CLICK_MODEL_CHOICES
            left, right = st.columns([3, 1])
            click_model = left.selectbox("Click model", list(models), format_func=models.get,
                                         key="evaluate_log_click_model")
            min_impressions = right.number_input("Fewest examinations", 1, 100_000,
                                                 log_model.DEFAULT_MIN_IMPRESSIONS, key="evaluate_log_min_impressions",
                                                 help="A pair looked at fewer times stays unjudged (an impression "
                                                      "counts as the examination of its position)")
            return log_model.run_options(query_set, click_model, int(min_impressions))
        return log_model.run_options(query_set, None, log_model.DEFAULT_MIN_IMPRESSIONS)
