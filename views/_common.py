"""What the pages share: the store, cached reads of the view model, colours, safe text."""

from __future__ import annotations

import html
import re

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.paths import data_dir
from searchgrade.engine.store import STOPPED_STATUSES, RunRecord, Store
from searchgrade.server import jobs
from searchgrade.server.deploy import is_exposed
from searchgrade.server.outbound import check_llm_endpoint
from searchgrade.viewmodels import compare as compare_model
from searchgrade.viewmodels import drilldown as drilldown_model
from searchgrade.viewmodels import evaluate as evaluate_model
from searchgrade.viewmodels import metric_help
from searchgrade.viewmodels import results as results_model
from searchgrade.viewmodels import runs as runs_model
from searchgrade.viewmodels import trends as trends_model
from searchgrade.viewmodels.results_view import ResultsView


def glossary(metrics: list[str], k: int | None = None, run: RunRecord | None = None) -> None:
    """The glossary, folded: every metric the page offers (its definition, range and direction, from
    its record) and the other words the charts and tables use (viewmodels/metric_help.py)."""
    entries = metric_help.glossary(metrics, k, run)
    with st.expander("Glossary: every metric offered here, and the words the page uses (" +
                     ", ".join(metric_help.WORDS) + ")"):
        for entry in entries:
            st.markdown(f"**{plain(entry.word)}**: {plain(entry.meaning)}")


def run_label(run: RunRecord) -> str:
    """The one label of a run on every page: "name · collection · date" (and the status when not
    complete); viewmodels/runs.py says it, for the pages' dropdowns and titles alike."""
    return runs_model.run_label(run)


def home() -> str:
    """The data directory of this app process, as a cache key."""
    return str(data_dir().resolve())


@st.cache_resource(show_spinner=False)
def store_for(path: str) -> Store:
    store = Store(path)
    store.mark_stale_runs()
    return store


def get_store() -> Store:
    return store_for(home())


def app_exposed() -> bool:
    """True when this app server is bound to an address other machines can reach (server/deploy.py)."""
    return is_exposed(st.get_option("server.address"))


def _clear_caches(job: jobs.Job) -> None:
    # A run just wrote to the store: cached reads may be stale (trends, run lists).
    st.cache_data.clear()


jobs.on_finish(_clear_caches)


@st.cache_data(show_spinner="Reading the run…", max_entries=32)
def results_view(path: str, run_id: str, metric: str, k: int) -> ResultsView:
    return results_model.results_view(store_for(path), run_id, metric, k)


@st.cache_data(show_spinner=False, max_entries=32)
def ideal_words(path: str, run_id: str, metric: str, k: int) -> str | None:
    store = store_for(path)
    return metric_help.ideal_words(store, store.get_run(run_id), metric, k)


@st.cache_data(show_spinner=False, max_entries=64)
def query_choices(path: str, run_id: str):
    return drilldown_model.query_choices(store_for(path), run_id)


@st.cache_data(show_spinner=False, max_entries=128)
def query_detail(path: str, run_id: str, query_id: str) -> drilldown_model.QueryDetail:
    return drilldown_model.query_detail(store_for(path), run_id, query_id)


@st.cache_data(show_spinner=False, max_entries=32)
def trend(path: str, metric: str, k: int, collection: str | None, runs_key: tuple[str, ...]):
    return trends_model.trend(store_for(path), metric, k, collection)


@st.cache_data(show_spinner=False, max_entries=8)
def trend_cutoffs(path: str, runs_key: tuple[str, ...]) -> list[int]:
    return trends_model.trend_cutoffs(store_for(path))


@st.cache_data(show_spinner="Comparing the runs…", max_entries=32)
def compare_runs(path: str, run_a: str, run_b: str, metric: str, k: int) -> compare_model.RunComparison:
    return compare_model.compare_runs(store_for(path), run_a, run_b, metric, k)


@st.cache_data(show_spinner=False, max_entries=16)
def collection_overview(path: str, mtime: float) -> evaluate_model.CollectionOverview:
    return evaluate_model.collection_overview(path)


@st.cache_data(show_spinner=False, max_entries=16)
def query_set_choices(path: str, collection_name: str, runs_key: tuple[str, ...]) -> list[tuple[str, str]]:
    return evaluate_model.query_set_choices(store_for(path), collection_name)


def resume_controls(run: RunRecord, key: str) -> None:
    """A stopped run's "Resume this run" button (and, for an LLM run, its endpoint, editable); a
    complete run's "Retry what failed" when strategies failed on queries.

    The run continues in the background worker; the page switches to Evaluate to show it.
    """
    retry = run.status == "complete" and bool(get_store().failed_query_counts(run.run_id))
    if run.status not in STOPPED_STATUSES and not retry:
        return
    stored = (run.config.get("llm") or {}).get("base_url") or ""
    st.caption("Retrying searches again only the queries the strategies above failed on, once their "
               "servers are back; everything else the run did is kept." if retry else
               "Resuming continues with the run's stored configuration: its queries are reused, "
               "completed LLM judgments come from the cache, and only the missing work is done.")
    base_url = stored
    if run.config.get("llm"):
        # One field per run: an endpoint typed for one run is never the next one's.
        base_url = st.text_input("LLM endpoint base URL (change it if the server moved)", stored,
                                 key=f"{key}_base_url_{run.run_id}").strip()
    if st.button("Retry what failed" if retry else "Resume this run", type="primary", key=f"{key}_button"):
        try:
            # A new endpoint is typed in the browser: the outbound guard's, as on Evaluate.
            endpoint = check_llm_endpoint(base_url, app_exposed()) if base_url and base_url != stored else None
        except SearchGradeError as exc:
            st.error(public(str(exc)))
            return
        job, started = jobs.start_resume(run.run_id, get_store(), home(), label=run.collection_name,
                                         endpoint=endpoint)
        if not started:
            st.toast("A run is already in progress: showing it instead of resuming this one.")
        st.session_state["evaluate_job_id"] = job.job_id
        st.session_state["evaluate_form"] = False
        st.switch_page("views/evaluate.py")


def running_controls(run: RunRecord, key: str) -> None:
    """A running run (from this app or another process): its stage, a Cancel button, and a watch
    that reruns the page when the run stops (complete, or interrupted once its heartbeat is stale).
    """
    st.info(plain(f"This run is still running (stage: {run.stage or 'starting'}). "
                  "Its results appear when it completes."))
    if st.session_state.get(f"{key}_asked") == run.run_id:
        st.caption("Cancel asked: the run stops at its next step and keeps what it did, for resume.")
    elif st.button("Cancel this run", key=f"{key}_cancel",
                   help="Stop the run, wherever it runs (this app or the command line); what it did is "
                   "kept and Resume continues it"):
        active = jobs.active_job()
        if active is not None and active.run_id == run.run_id:
            jobs.cancel(active.job_id, get_store())
        else:
            get_store().request_cancel(run.run_id)
        st.session_state[f"{key}_asked"] = run.run_id
        st.rerun()
    _watch_status(run.run_id, run.status)


@st.fragment(run_every=2.0)
def _watch_status(run_id: str, status: str) -> None:
    # A fresh read each time: a stale heartbeat turns the run interrupted on this read.
    if get_store().get_run(run_id).status != status:
        st.rerun()


def run_choices(*, complete_only: bool = False) -> list[runs_model.RunChoice]:
    # Not cached: a run started from the CLI or another tab must show up on the next rerun.
    return runs_model.run_choices(get_store(), complete_only=complete_only)


def pick_run(choices: list[runs_model.RunChoice], key: str, label: str = "Run") -> str:
    """A run dropdown that starts on the run other pages last opened (else the newest complete run)."""
    ids = [c.run_id for c in choices]
    labels = {c.run_id: c.label for c in choices}
    wanted = st.session_state.pop("app_open_run", None)
    if wanted in ids:
        st.session_state[key] = wanted
    if st.session_state.get(key) not in ids:
        st.session_state.pop(key, None)
        complete = [c.run_id for c in choices if c.status == "complete"]
        default = st.session_state.get("app_run_id")
        default = default if default in ids else (complete[0] if complete else ids[0])
        st.session_state[key] = default
    run_id = st.selectbox(label, ids, format_func=labels.get, key=key)
    st.session_state["app_run_id"] = run_id
    return run_id


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def public(text: str) -> str:
    """Text for the page with the server's folders (data directory, demo, collections root) hidden,
    made inert as ``plain`` does: a message names files as the user gave them, never a server path."""
    from searchgrade.engine.paths import collections_root
    from searchgrade.viewmodels.collection_form import without_server_paths

    return plain(without_server_paths(text, data_dir(), collections_root()))


def plain(text: str) -> str:
    """Text made inert for st.info / st.warning, which read Markdown: every special character escaped.

    Every string from a user or a collection (names, ids, model names, errors quoting them) that
    goes into Markdown (st.markdown, st.caption, st.info and the like, widget labels, tabs, expander
    labels, st.metric) goes through this first: a name must not become a link or an image.
    """
    return _MARKDOWN.sub(r"\\\1", text)


def chart_text(text: str) -> str:
    """Text made inert for Plotly, which reads a subset of HTML (links included) in names and labels."""
    return html.escape(str(text), quote=False)
