"""The Results page's suite actions: "Save as suite" for a complete run, "Run now" for a run of a
suite (in the app's background worker, shown on Evaluate). Called as ``suite_actions(run_id)``."""

from __future__ import annotations

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.server import jobs
from searchgrade.server.auth import no_auth
from searchgrade.viewmodels.suites import job_parts, save_suite, suite_of_run
from searchgrade.views._common import app_exposed, get_store, home, plain


def may_change_suites() -> bool:
    """An exposed app lets only a logged-in visitor create, change or run suites: with --no-auth,
    nobody has logged in."""
    return not (app_exposed() and no_auth())


def start_suite_run(name: str) -> None:
    """Run the suite in the background worker and show its progress on Evaluate."""
    load, run = job_parts(get_store(), name)
    job, started = jobs.start_job(load, None, get_store(), home(), label=f"suite {name}", run=run)
    if not started:
        st.toast("A run is already in progress: showing it instead of starting another.")
    st.session_state["evaluate_job_id"] = job.job_id
    st.session_state["evaluate_form"] = False
    st.switch_page("views/evaluate.py")


def suite_actions(run_id: str) -> None:
    """ "Run now" when the run belongs to a suite, else "Save as suite" (a complete run)."""
    store = get_store()
    suite = suite_of_run(store, run_id)
    if not may_change_suites():
        if suite:
            st.caption(f"A run of suite {plain(suite)}. Suites are changed only by a logged-in user.")
        return
    if suite:
        st.caption(f"A run of suite {plain(suite)}: its runs share their queries and pair on Suites.")
        if st.button("Run now", key=f"suite_actions_run_{run_id}"):
            start_suite_run(suite)
        return
    if store.get_run(run_id).status != "complete":
        return
    with st.popover("Save as suite"):
        name = st.text_input("Suite name", key=f"suite_actions_name_{run_id}", placeholder="nightly-prod")
        if st.button("Save", key=f"suite_actions_save_{run_id}", type="primary"):
            try:
                saved = save_suite(store, name.strip(), run_id)
            except SearchGradeError as exc:
                st.error(plain(str(exc)))
            else:
                st.success(f"Suite {plain(saved.name)} saved: {len(saved.query_ids)} queries. See it on Suites.")
