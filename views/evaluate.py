"""Evaluate: pick a collection, check the defaults, run an evaluation in the background."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.llm.accounting import usage_text
from searchgrade.engine.llm.env import ENV_API_KEY, endpoint_status, env_api_key, llm_defaults
from searchgrade.engine.llm.key_policy import key_withheld_note
from searchgrade.engine.paths import DEMO_DIR
from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.server import jobs
from searchgrade.server.outbound import check_llm_endpoint
from searchgrade.viewmodels.collection_form import Choice
from searchgrade.viewmodels.declared import Declared, declared_strategies, test_strategy
from searchgrade.viewmodels.evaluate import (
    ESTIMATE_TIMEOUT_S,
    CollectionOverview,
    backend_choices,
    clicks_mode,
    cost_estimate,
    index_choices,
    index_defaults,
    index_settings,
    judge_prompt_upload,
    judge_prompt_version,
    mode_status,
)
from searchgrade.viewmodels.progress import duration_words, stage_words
from searchgrade.viewmodels.query_log import has_click_log
from searchgrade.viewmodels.reranker import page_fix, reranked, reranker_problem, trained_rerankers
from searchgrade.viewmodels.runs import run_choices, skipped_messages
from searchgrade.views._add_search import add_your_search
from searchgrade.views._collection import choose_collection, collection_overview, show_error
from searchgrade.views._common import (
    app_exposed,
    get_store,
    home,
    plain,
    public,
    query_set_choices,
    resume_controls,
)
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


def _llm_settings(mode: str, overview: CollectionOverview) -> dict:
    """The LLM part of the form: what to generate (LLM mode) and how hard to push the endpoint."""
    from searchgrade.engine.llm.querygen import QueryGenSettings

    defaults = QueryGenSettings()
    fields: dict = {"mode": mode}
    with st.container(border=True):
        st.markdown("**LLM judge**")
        if mode == "llm":
            runs_key = tuple(c.run_id for c in run_choices(get_store()))
            reusable = dict(query_set_choices(home(), overview.name, runs_key))
            options = [None, *reusable]
            if st.session_state.get("evaluate_queries_from") not in options:
                st.session_state.pop("evaluate_queries_from", None)
            fields["queries_from"] = st.selectbox(
                "Queries", options, key="evaluate_queries_from",
                format_func=lambda r: "Generate new queries" if r is None else f"Reuse the queries of run {reusable[r]}",
                help="Trends over time only mean something on one query set: reuse an earlier run's "
                "generated queries to evaluate a new configuration on exactly the same ones")
            generate = fields["queries_from"] is None
            one, two, three, four = st.columns(4)
            fields["n_docs"] = one.number_input(
                "Documents to sample", 1, max(overview.documents, 1), min(defaults.n_docs, overview.documents),
                key="evaluate_llm_docs", disabled=not generate,
                help="A seeded sample spread over the corpus; the model writes queries for each")
            fields["n_natural"] = two.number_input("Natural-language queries per document", 0, 20,
                                                   defaults.n_natural, key="evaluate_llm_natural",
                                                   disabled=not generate)
            fields["n_keyword"] = three.number_input("Keyword queries per document", 0, 20,
                                                     defaults.n_keyword, key="evaluate_llm_keyword",
                                                     disabled=not generate)
            fields["min_words"] = four.number_input(
                "Skip documents under N words", 1, 10_000, defaults.min_words, key="evaluate_llm_min_words",
                disabled=not generate,
                help=f"Too short to ask about; the default also skips documents under "
                f"{defaults.min_chars} characters")
        else:
            fields["judge_unjudged"] = st.checkbox(
                "Also judge the results the human judgments miss, and use those grades", False,
                key="evaluate_judge_unjudged",
                help="Human grades always win. Without it the judge grades only the results humans "
                "graded, to measure judge-vs-human agreement (Cohen's kappa)")
        fields["concurrency"] = st.number_input("LLM requests in flight", 1, 64, 4,
                                                key="evaluate_llm_concurrency")
        fields["judge"] = _judge_prompt()
    return fields


def _judge_prompt():
    """The uploaded judge prompt's settings, checked as --judge-prompt is; None: the packaged prompt;
    the error (shown here) for a file that is not one."""
    from searchgrade.engine.llm.prompts import MAX_JUDGE_PROMPT_BYTES

    upload = st.file_uploader(
        "Judge prompt (optional): your own prompt file", type=["txt"], key="evaluate_judge_prompt",
        max_upload_size=1,
        help="A copy of engine/llm/prompts/judge_v1.txt, edited: the same sections, exactly {{query}} and "
        f"{{{{document}}}}, the 0-3 scale; at most {MAX_JUDGE_PROMPT_BYTES // 1024} KB. Empty: the "
        "packaged prompt")
    if upload is None:
        return None
    try:
        settings = judge_prompt_upload(upload.name, upload)
    except SearchGradeError as exc:
        show_error(exc)
        return exc
    st.caption(plain(f"Judging with your prompt, version {judge_prompt_version(settings)} (its name and "
                     "the hash of its text: part of every judgment's cache key, shown with the run)."))
    return settings


def _llm_config(fields: dict, model: str, base_url: str) -> dict:
    """RunConfig keywords for the LLM part of the form (empty without the LLM)."""
    if not fields:
        return {}
    from searchgrade.engine.llm.querygen import QueryGenSettings
    from searchgrade.engine.llm.settings import LLMSettings

    # The key is not here: the client reads OPENAI_API_KEY from the server's environment.
    if isinstance(fields["judge"], SearchGradeError):
        raise fields["judge"]  # a bad prompt file: nothing starts
    out: dict = {"llm": LLMSettings(model=model, base_url=base_url or None,
                                    concurrency=int(fields["concurrency"])),
                 "judge": fields["judge"]}
    if fields["mode"] == "qrels_llm":
        out["judge_unjudged"] = bool(fields["judge_unjudged"])
        return out
    if fields["queries_from"] is not None:
        out["queries_from"] = fields["queries_from"]
        return out
    defaults = QueryGenSettings()
    min_words = int(fields["min_words"])
    out["querygen"] = QueryGenSettings(
        n_docs=int(fields["n_docs"]), n_natural=int(fields["n_natural"]), n_keyword=int(fields["n_keyword"]),
        # One explicit word minimum replaces the default's character minimum (as --min-doc-words).
        min_words=min_words, min_chars=defaults.min_chars if min_words == defaults.min_words else 0,
    )
    return out


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

    # Open only where the LLM is the way to grade: a collection without judgments, no endpoint set.
    with st.expander("LLM endpoint (for the LLM judge)",
                     expanded=not overview.has_qrels and not endpoint_status(None, None)[0]):
        st.text_input("Model", key="evaluate_llm_model", placeholder="e.g. gpt-4o-mini",
                      help="Pre-filled from SEARCHGRADE_LLM_MODEL")
        st.text_input("Endpoint base URL", key="evaluate_llm_base_url",
                      placeholder="http://127.0.0.1:8080/v1 (empty: the hosted OpenAI API)",
                      help="Any OpenAI-compatible server (llama.cpp, vLLM, Ollama, ...); pre-filled "
                      "from OPENAI_BASE_URL")
        key_set = bool(env_api_key())
        st.caption(f"API key: read only from {ENV_API_KEY} in the app server's environment "
                   f"({'set' if key_set else 'not set'}); never asked for here, shown or stored.")
        withheld = key_withheld_note(st.session_state["evaluate_llm_base_url"].strip())
        if withheld:
            st.warning(plain(withheld[0].upper() + withheld[1:] + "."))
    model = st.session_state["evaluate_llm_model"].strip()
    base_url = st.session_state["evaluate_llm_base_url"].strip()

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
        return
    missing_llm = [m.label for m in modes if not m.available and m.mode in ("llm", "qrels_llm")]
    if missing_llm:
        # One line for the LLM modes, not one "unavailable" line each.
        st.caption(plain(f"{' and '.join(missing_llm)}: not available yet, {modes[1].reason}."))
    if st.session_state.get("evaluate_mode") not in [m.mode for m in available]:
        st.session_state.pop("evaluate_mode", None)
    mode = st.radio("Grading", [m.mode for m in available], key="evaluate_mode",
                    format_func={m.mode: m.label for m in available}.get, horizontal=True)
    uses_llm = mode in ("llm", "qrels_llm")

    offered = declared_strategies()
    if offered.error:
        st.error(plain(f"Strategies file {offered.path}: {offered.error}"))
    defaults = index_defaults()
    st.session_state.setdefault("evaluate_reranker", defaults["reranker_model"])
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
    add_your_search(offered, choice)
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
    llm_fields = _llm_settings(mode, overview) if uses_llm else {}
    log_options: dict = {}
    if mode in ("llm", "clicks"):
        if mode == "clicks":
            st.session_state["evaluate_log_use"] = True
            st.session_state["evaluate_log_by_clicks"] = True
        log_options = query_log_section(overview.name)
    with st.expander("Models and indexes"):
        embedding = st.text_input("Embedding model (name or local path)", defaults["embedding_model"],
                                  key="evaluate_embedding")
        backends = backend_choices()
        backend = st.selectbox(
            "Embedding backend", list(backends), index=list(backends).index(defaults["embedding_backend"]),
            key="evaluate_backend", format_func=lambda name: f"{name}: {backends[name]}",
            help="onnx-int8 embeds faster on a CPU, with slightly different vectors (see the README); "
                 "torch uses a CUDA GPU when there is one")
        trained = ", ".join(plain(f"trained:{c['name']}") for c in trained_rerankers(home()))
        reranker = st.text_input(
            "Reranker model (cross-encoder name or local path)", key="evaluate_reranker",
            help="Or trained:NAME, a reranker trained on a run's grades (Results, \"Train a reranker "
                 "on these grades\")" + (f"; trained here: {trained}" if trained else ""))
        if rerank_problem:
            st.caption(public(f"Not loadable here: {rerank_problem.split('; ')[0]}."))
        ann = st.selectbox("ANN index", index_choices(),
                           index=index_choices().index(defaults["ann_index"]), key="evaluate_ann",
                           help="auto: exact search up to 200,000 documents, IVF above")
        b1, b2, b3, b4 = st.columns(4)
        knobs = {
            "bm25_k1": b1.number_input("BM25 k1", 0.0, 10.0, float(defaults["bm25_k1"]), 0.1, key="evaluate_bm25_k1",
                                       help="Term-frequency saturation of full-text search"),
            "bm25_b": b2.number_input("BM25 b", 0.0, 1.0, float(defaults["bm25_b"]), 0.05, key="evaluate_bm25_b",
                                      help="Length normalisation of full-text search (0: none, 1: full)"),
            "rrf_k": b3.number_input("RRF k", 1, 1000, int(defaults["rrf_k"]), key="evaluate_rrf_k",
                                     help="Reciprocal rank fusion (Hybrid): score = sum of 1 / (k + rank)"),
            "fusion_depth": b4.number_input("Fusion depth", 1, 1000, int(defaults["fusion_depth"]),
                                            key="evaluate_fusion_depth",
                                            help="How many results of each list Hybrid fuses"),
        }

    def run_config():
        """The run the form describes (raises SearchGradeError)."""
        from searchgrade.engine.run.config import RunConfig

        llm = _llm_config(llm_fields, model, base_url)
        if llm:
            # An endpoint typed in the browser is held to the outbound policy before anything runs.
            check_llm_endpoint(base_url or None, app_exposed())
        traffic = dict(log_options)
        if mode == "clicks" and traffic.get("mode") != "clicks":
            raise SearchGradeError("grading by clicks needs a query set of the log: sample one under "
                                   "'Queries from a query log', with 'Grade with the clicks' ticked")
        run_mode = traffic.pop("mode", None) or ("llm" if mode == "llm" else "qrels")
        if traffic.get("query_set"):
            llm.pop("querygen", None)  # the query set's queries, none generated (as the CLI does)
        config = RunConfig(
            name=name.strip() or None, mode=run_mode, k=int(k),
            depth=max(int(depth), int(k)), strategies=tuple(strategies),
            max_queries=int(sample) or None,
            index=index_settings({"embedding_model": embedding.strip(), "embedding_backend": backend,
                                   "reranker_model": reranker.strip(), "ann_index": ann,
                                   **{key: value for key, value in knobs.items()}}),
            declared=offered.declared, rerankers=offered.rerankers, **llm, **traffic,
        )
        config.validate()
        config.check_environment()
        return config

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


def _strategy_picker(offered: Declared, not_preselected: list[str]) -> list[str]:
    """The Strategies picker: at first the strategies that can run (not ``not_preselected``), then the
    person's choice, kept across reruns, runs and page switches."""
    key, kept_key = "evaluate_strategies", "evaluate_kept_strategies"
    if key not in st.session_state or not isinstance(st.session_state[key], list):
        kept = st.session_state.get(kept_key)
        st.session_state[key] = (list(kept) if kept is not None
                                 else [n for n in offered.names if n not in not_preselected])
    st.session_state[key] = [n for n in st.session_state[key] if n in offered.names]
    strategies = st.multiselect("Strategies", offered.names, format_func=strategy_label, key=key)
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
