"""Evaluate: pick a collection, check the defaults, run an evaluation in the background."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.llm.accounting import usage_text
from searchgrade.engine.llm.env import llm_defaults
from searchgrade.engine.paths import DEMO_DIR
from searchgrade.engine.run.request import RunRequest
from searchgrade.engine.run.request import run_config as build_run_config
from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.server import jobs
from searchgrade.server.outbound import check_judge_endpoints, check_llm_endpoint
from searchgrade.viewmodels.collection_form import Choice
from searchgrade.viewmodels.declared import Declared, declared_strategies, test_strategy
from searchgrade.viewmodels.evaluate import (
    ESTIMATE_TIMEOUT_S,
    CollectionOverview,
    clicks_mode,
    cost_estimate,
    index_defaults,
    mode_status,
)
from searchgrade.viewmodels.progress import duration_words, stage_words
from searchgrade.viewmodels.query_log import has_click_log
from searchgrade.viewmodels.reranker import page_fix, reranked, reranker_problem
from searchgrade.viewmodels.runs import skipped_messages
from searchgrade.views._add_search import add_your_search
from searchgrade.views._collection import choose_collection, collection_overview, show_error
from searchgrade.views._common import (
    app_exposed,
    get_store,
    home,
    plain,
    public,
    resume_controls,
)
from searchgrade.views._evaluate_llm import llm_endpoint, llm_options
from searchgrade.views._failures import failed_strategies
from searchgrade.views._index_settings import index_options
from searchgrade.views._query_log import query_log_section

if TYPE_CHECKING:
    from searchgrade.engine.run.config import RunConfig

st.session_state.setdefault("evaluate_job_id", None)
st.session_state.setdefault("evaluate_form", False)
#: The last cost estimate: (the settings it was made for, its lines).
st.session_state.setdefault("evaluate_estimate", None)
# The LLM endpoint, pre-filled from the server's environment (the API key is never a widget).
# Re-assigned on every run, so what was typed survives while the form is hidden by a run.
for _name, _value in llm_defaults().items():
    st.session_state[f"evaluate_llm_{_name}"] = st.session_state.get(f"evaluate_llm_{_name}", _value)
# So do the collection and the grading mode (widgets without a default value of their own).
for _key in ("evaluate_source", "evaluate_path", "evaluate_mode"):
    if _key in st.session_state:
        st.session_state[_key] = st.session_state[_key]

st.title("Evaluate search quality")

active = jobs.active_job()
if active is not None and not st.session_state["evaluate_form"]:
    # A refresh or a second tab shows the run already going, not a new one.
    st.session_state["evaluate_job_id"] = active.job_id


def _stage_table(job: jobs.Job) -> None:
    for stage in job.stages.values():
        text = stage_words(stage.stage, stage.done, stage.total, stage.remaining_s if job.active else None)
        if stage.stage in job.usage:
            # LLM stages: calls and tokens so far.
            text += f" · {usage_text(job.usage[stage.stage])}"
        st.progress(stage.fraction, text=plain(text))


@st.fragment(run_every=1.0)
def _live(job_id: str) -> None:
    job = jobs.snapshot(job_id)
    if job is None:
        return
    if not job.active:
        st.rerun()
    # From the worker's memory, not the store: opening DuckDB every second slows the run down.
    run_stage = job.current_stage or "loading"
    verb = {"resume": "Resuming a stopped run", "train": f"Training reranker {job.reranker}"}.get(
        job.kind, "Running")
    now = job.stages.get(run_stage)
    left = now.remaining_s if now is not None else None
    st.markdown(f"**{verb}** on {plain(job.collection)}: **{plain(stage_words(run_stage).lower())}** · "
                f"{duration_words(job.elapsed_s)} so far"
                + (f", about {duration_words(left)} left in this stage" if left is not None else ""))
    _stage_table(job)
    training = job.kind == "train"
    if job.cancel_requested:
        st.caption("Cancelling: training stops at its next step and saves no reranker." if training
                   else "Cancelling: the run stops at its next step and keeps what it did, for resume.")
    else:
        st.caption(f"{'Training' if training else 'The run'} continues if you close or refresh this tab.")
        if st.button("Cancel training" if training else "Cancel run", key="evaluate_cancel",
                     help="Stop training; no reranker is saved and the run it learns from is unchanged"
                     if training else "Stop the run; what it did is kept and Resume continues it"):
            jobs.cancel(job_id, get_store())
            st.rerun(scope="fragment")


def _show_job(job_id: str) -> None:
    job = jobs.snapshot(job_id)
    if job is None:
        st.session_state["evaluate_job_id"] = None
        return
    if job.active:
        _live(job_id)
    elif job.state == "complete":
        run = get_store().get_run(job.run_id)
        done = (f"Reranker {job.reranker} trained from run {run.name}" if job.kind == "train"
                else f"Run complete: {run.name}")
        st.success(plain(f"{done} ({job.elapsed_s:.0f} s)"))
        if job.kind != "train":
            failed_strategies(run)
        _stage_table(job)
    else:
        show = st.warning if job.state == "cancelled" else st.error
        what = f"Training reranker {job.reranker}" if job.kind == "train" else "The run"
        show(public(f"{what} {job.state}: {job.error}"))
        _stage_table(job)
        if job.run_id and job.kind != "train":  # a training job's run is its complete source run
            resume_controls(get_store().get_run(job.run_id), "evaluate_resume")
    for message in skipped_messages(job.skipped):
        st.warning(plain(page_fix(message)))
    for note in job.notes:
        st.caption(plain(f"Note: {note}"))
    one, two, _ = st.columns([1, 1, 3])
    if job.state == "complete":
        if one.button("View results", type="primary", key="evaluate_view"):
            st.session_state["app_open_run"] = job.run_id
            st.switch_page("views/results.py")
    else:
        two = one
    if two.button("Start new evaluation", key="evaluate_new"):
        st.session_state["evaluate_job_id"] = None
        st.session_state["evaluate_form"] = True
        st.rerun()


def _form() -> None:
    last = jobs.latest_job()
    if last is not None and last.state == "complete" and last.run_id:
        with st.container(border=True):
            st.markdown(f"Last run in this app: **{plain(last.collection)}**, complete.")
            if st.button("View results", key="evaluate_view_last"):
                st.session_state["app_open_run"] = last.run_id
                st.switch_page("views/results.py")
    choice = choose_collection()
    if choice is None:
        return
    try:
        overview = collection_overview(choice)
    except SearchGradeError as exc:
        show_error(exc)
        return
    _collection_summary(overview)
    model, base_url = llm_endpoint(overview)
    mode = _grading_mode(choice, overview, model, base_url)
    if mode is None:
        return
    uses_llm = mode in ("llm", "qrels_llm")

    offered = declared_strategies(collection=overview.name)
    if offered.error:
        st.error(plain(f"Strategies file {offered.path}: {offered.error}"))
    st.session_state.setdefault("evaluate_reranker", index_defaults()["reranker_model"])
    with st.spinner("Checking the reranker model…"):
        rerank_problem = reranker_problem(st.session_state["evaluate_reranker"], home(), offered.rerankers)
    reranked_names = reranked(offered.names, offered.declared, offered.rerankers)
    strategies = _strategy_picker(offered, reranked_names if rerank_problem else [])
    chosen_reranked = [s for s in strategies if s in reranked_names]
    if rerank_problem and chosen_reranked:
        # public: a trained:NAME that is not there names the data directory; the page does not.
        st.warning(public(f"{', '.join(strategy_label(s) for s in chosen_reranked)} will be skipped: "
                          f"{rerank_problem}."))
    elif rerank_problem and reranked_names:
        st.caption(public(f"Reranked strategies are not preselected: {rerank_problem}."))
    add_your_search(offered, choice, overview.name)
    if offered.kinds:
        _declared_panel(offered, choice)
    one, two, three, four = st.columns(4)
    k = one.number_input("k (cut-off of the headline metrics)", 1, 100, 10, key="evaluate_k")
    depth = two.number_input("Results kept per query (metrics at any k up to it)", 1, 1000, 10,
                             key="evaluate_depth", help="Raised to k when smaller")
    sample = 0
    if mode in ("qrels", "qrels_llm"):
        sample = three.number_input(
            "Queries to evaluate (0 = all)", 0, max(overview.judged_queries, 1), 0, key="evaluate_sample",
            help="A seeded sample: the same number gives the same queries")
    name = four.text_input("Run name (optional)", key="evaluate_name", placeholder=f"{overview.name} {{date}}")
    # The button stays here, above the fold; the settings below it are read when it is pressed.
    start = st.container()
    llm_fields = llm_options(mode, overview) if uses_llm else {}
    log_options: dict = {}
    if mode in ("llm", "clicks"):
        if mode == "clicks":
            st.session_state["evaluate_log_use"] = True
            st.session_state["evaluate_log_by_clicks"] = True
        log_options = query_log_section(overview.name)
    index = index_options(rerank_problem)

    def run_config() -> RunConfig:
        """The run the form describes, checked as every surface's request is (raises SearchGradeError)."""
        if isinstance(llm_fields.get("judge"), SearchGradeError):
            raise llm_fields["judge"]  # a bad prompt file: nothing starts
        llm: dict = {}
        if uses_llm:
            # An endpoint typed in the browser is held to the outbound policy before anything runs,
            # and keeps where it was typed: every connection to it goes through the policy; a
            # panel's judges' own endpoints (NAME@URL) too.
            endpoint = check_llm_endpoint(base_url or None, app_exposed())
            judges_declared_in = check_judge_endpoints(llm_fields.get("judge_models", ()), app_exposed())
            llm = {"model": model, "base_url": base_url, "endpoint_declared_in": endpoint.declared_in,
                   "judges_declared_in": judges_declared_in, **llm_fields}
        traffic = dict(log_options)
        by_clicks = traffic.pop("mode", None) == "clicks" or mode == "clicks"
        if traffic.get("query_set") or llm.get("queries_from"):
            llm.update(docs=None, queries_per_doc=None, keyword_per_doc=None, min_doc_words=None)  # none generated
        request = RunRequest(
            qrels=mode in ("qrels", "qrels_llm"), llm=uses_llm, clicks=by_clicks, name=name.strip() or None,
            k=int(k), depth=int(depth) if depth > k else None, max_queries=int(sample) or None,
            strategies=tuple(strategies), declared=offered.declared, declared_rerankers=offered.rerankers,
            index=index, **llm, **traffic)
        return build_run_config(request)

    with start:
        if uses_llm:
            _estimate(choice, run_config)
        clicked = st.button("Evaluate search quality", type="primary", key="evaluate_start")
    if clicked:
        from searchgrade.engine.collections import load_collection

        try:
            config = run_config()
        except SearchGradeError as exc:
            with start:
                show_error(exc)
            return
        job, started = jobs.start_job(lambda: load_collection(choice.path, **choice.options), config,
                                      get_store(), home(), label=overview.name)
        if not started:
            st.toast("A run is already in progress: showing it instead of starting another.")
        st.session_state["evaluate_job_id"] = job.job_id
        st.session_state["evaluate_form"] = False
        st.session_state["evaluate_estimate"] = None  # a run fills the cache: its counts are stale
        st.rerun()


def _collection_summary(overview: CollectionOverview) -> None:
    """What the collection holds, and what to know about its judgments."""
    summary = f"**{plain(overview.name)}**: {overview.documents:,} documents"
    if overview.has_qrels:
        summary += f", {overview.judged_queries:,} queries with human judgments ({overview.scale_words})"
    st.markdown(summary)
    warning = overview.judgment_warning()
    if warning:
        st.warning(plain(warning))
    if overview.has_precomputed_embeddings:
        st.caption("Precomputed document vectors found: the ANN index builds without re-encoding.")
    for note in overview.notes:
        st.caption(plain(f"Note: {note}"))


def _grading_mode(choice: Choice, overview: CollectionOverview, model: str, base_url: str) -> str | None:
    """The grading mode chosen among those that can run; None (and what to add) when none can."""
    modes = [*mode_status(overview, model=model, base_url=base_url),
             clicks_mode(has_click_log(get_store(), overview.name))]
    available = [m for m in modes if m.available]
    if not available:
        for m in modes[:2]:
            st.caption(plain(f"{m.label}: unavailable, {m.reason}."))
        if not choice.options.get("qrels_file") and choice.path != str(DEMO_DIR):
            # The person has not attached judgments yet: say what to add, not that nothing can run.
            st.info("To evaluate this collection, add a queries file and a judgments file (qrels) under "
                    "\"Queries and judgments\" above, or type an LLM endpoint under \"LLM endpoint\" for "
                    "the LLM judge.")
        else:
            st.error("No grading mode can run on this collection: add human judgments (qrels) whose "
                     "document ids are the corpus's, or configure an LLM endpoint.")
        return None
    missing_llm = [m.label for m in modes if not m.available and m.mode in ("llm", "qrels_llm")]
    if missing_llm:
        # One line for the LLM modes, not one "unavailable" line each.
        st.caption(plain(f"{' and '.join(missing_llm)}: not available yet, {modes[1].reason}."))
    if st.session_state.get("evaluate_mode") not in [m.mode for m in available]:
        st.session_state.pop("evaluate_mode", None)
    return st.radio("Grading", [m.mode for m in available], key="evaluate_mode",
                    format_func={m.mode: m.label for m in available}.get, horizontal=True)


def _strategy_picker(offered: Declared, not_preselected: list[str]) -> list[str]:
    """The Strategies picker: at first the strategies that can run (not ``not_preselected``), then the
    person's choice, kept across reruns, runs and page switches."""
    key, kept_key = "evaluate_strategies", "evaluate_kept_strategies"
    if key not in st.session_state or not isinstance(st.session_state[key], list):
        kept = st.session_state.get(kept_key)
        st.session_state[key] = (list(kept) if kept is not None
                                 else [n for n in offered.names if n not in not_preselected])
    gone = [n for n in st.session_state[key] if n not in offered.names and n in offered.elsewhere]
    st.session_state[key] = [n for n in st.session_state[key] if n in offered.names]
    if gone:
        st.session_state[f"{kept_key}_gone"] = {n: offered.elsewhere[n] for n in gone}
    strategies = st.multiselect("Strategies", offered.names, format_func=strategy_label, key=key)
    for name, where in (st.session_state.get(f"{kept_key}_gone") or {}).items():
        if name not in offered.names:
            st.caption(plain(f"{name} was added for the collection {where} and is offered only there (it "
                             "searches that collection's ids): unselected here."))
    st.session_state[kept_key] = list(strategies)
    return strategies


def _declared_panel(offered: Declared, choice: Choice) -> None:
    """The strategies file's strategies, each with a Test: one sample query, mapped ids and titles."""
    with st.expander(f"Your own search systems ({len(offered.kinds)} declared in "
                     f"{Path(offered.path).name})"):
        st.caption("Declared in the strategies file (`searchgrade app --strategies-file FILE`); secrets "
                   "are read from the app server's environment, never shown or stored. Test runs one "
                   "sample query (the collection's first) and shows what the mapping reads.")
        for name, kind in offered.kinds.items():
            left, right = st.columns([4, 1])
            left.markdown(f"**{plain(name)}** ({plain(kind)})")
            if right.button("Test", key=f"evaluate_test_{name}"):
                from searchgrade.engine.collections import load_collection

                with st.spinner(f"One query through {name}…"):
                    try:
                        result = test_strategy(name, offered.declared,
                                               load_collection(choice.path, **choice.options), Path(home()))
                    except SearchGradeError as exc:
                        show_error(exc)
                        continue
                if result.error:
                    st.error(plain(f"{name}: {result.error}"))
                    continue
                shown = len(result.results)
                message = (f"{name} answered {result.query!r} in {1000 * result.seconds:.0f} ms: "
                           f"{result.in_collection} of {shown} results are in the collection")
                (st.success if result.in_collection == shown and shown else st.warning)(plain(message))
                st.dataframe(result.results, hide_index=True, key=f"evaluate_test_table_{name}")


def _estimate(choice: Choice, run_config: Callable[[], RunConfig]) -> None:
    """The dry run's calls and tokens (``evaluate --dry-run``'s function), on request; shown while the
    form still describes the run they were estimated for."""
    import json

    if st.button("Estimate cost", key="evaluate_estimate_button",
                 help="The LLM calls and tokens this run would use, as `searchgrade evaluate --dry-run` "
                 "counts them: nothing is indexed, searched, prompted or stored"):
        from searchgrade.engine.collections import load_collection

        try:
            config = run_config()
            with st.spinner("Estimating: sampling documents and building prompts…"):
                estimate = cost_estimate(load_collection(choice.path, **choice.options), config, get_store())
        except SearchGradeError as exc:
            show_error(exc)
            return
        signature = json.dumps(config.to_json(), sort_keys=True, default=str)
        st.session_state["evaluate_estimate"] = (signature, [*estimate.notes, *estimate.lines()])
    last = st.session_state["evaluate_estimate"]
    if last is None:
        return
    try:
        current = json.dumps(run_config().to_json(), sort_keys=True, default=str)
    except SearchGradeError:
        return
    if current != last[0]:
        return  # the form changed since: press Estimate again
    with st.container(border=True, key="evaluate_estimate_box"):
        st.markdown("**Estimated cost** (nothing was indexed, searched, prompted or stored)")
        for line in last[1]:
            st.markdown(f"- {plain(line[0].upper() + line[1:])}")
        st.caption(f"Judge calls are an upper bound (the documents each strategy returns are known only "
                   f"after searching); tokens at ~4 characters per token on real prompts. Cached replies "
                   f"are counted when the endpoint answers GET /models within {ESTIMATE_TIMEOUT_S:g} s.")


if st.session_state["evaluate_job_id"]:
    _show_job(st.session_state["evaluate_job_id"])
else:
    if active is not None:
        st.info(plain(f"A run on {active.collection} is in progress; a new one can start when it ends."))
        if st.button("Show the run in progress", key="evaluate_show_active"):
            st.session_state["evaluate_form"] = False
            st.rerun()
    _form()
