"""The Evaluate form's LLM parts: the endpoint, what the judge does, the judge's prompt.

What they return is the run request's vocabulary (engine/run/request.py: ``RunRequest`` fields),
checked where every surface's request is checked.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.llm.env import ENV_API_KEY, endpoint_status, env_api_key
from searchgrade.engine.llm.key_policy import key_withheld_note
from searchgrade.viewmodels.evaluate import CollectionOverview, judge_prompt_upload, judge_prompt_version
from searchgrade.viewmodels.runs import run_choices
from searchgrade.views._collection import show_error
from searchgrade.views._common import get_store, home, plain, query_set_choices


def llm_endpoint(overview: CollectionOverview) -> tuple[str, str]:
    """The model and the endpoint's base URL typed (pre-filled from the server's environment; the
    API key is never a widget)."""
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
    return st.session_state["evaluate_llm_model"].strip(), st.session_state["evaluate_llm_base_url"].strip()


def llm_options(mode: str, overview: CollectionOverview) -> dict[str, Any]:
    """What the judge does (LLM mode: the queries to generate or reuse; with qrels: whether it grades
    what the humans did not) and how hard to push the endpoint, as RunRequest fields.

    ``judge`` is the uploaded prompt's settings, or the SearchGradeError of a file that is not one
    (shown here; the run does not start).
    """
    from searchgrade.engine.llm.querygen import QueryGenSettings

    defaults = QueryGenSettings()
    fields: dict[str, Any] = {}
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
            generated = {
                "docs": one.number_input(
                    "Documents to sample", 1, max(overview.documents, 1), min(defaults.n_docs, overview.documents),
                    key="evaluate_llm_docs", disabled=not generate,
                    help="A seeded sample spread over the corpus; the model writes queries for each"),
                "queries_per_doc": two.number_input("Natural-language queries per document", 0, 20,
                                                    defaults.n_natural, key="evaluate_llm_natural",
                                                    disabled=not generate),
                "keyword_per_doc": three.number_input("Keyword queries per document", 0, 20,
                                                      defaults.n_keyword, key="evaluate_llm_keyword",
                                                      disabled=not generate),
                "min_doc_words": four.number_input(
                    "Skip documents under N words", 1, 10_000, defaults.min_words, key="evaluate_llm_min_words",
                    disabled=not generate,
                    help=f"Too short to ask about; the default also skips documents under "
                    f"{defaults.min_chars} characters"),
            }
            if generate:
                fields.update({name: int(value) for name, value in generated.items()})
                if fields["min_doc_words"] == defaults.min_words:
                    # Untouched: the default's word and character minimums (--min-doc-words not given).
                    fields["min_doc_words"] = None
        else:
            fields["judge_unjudged"] = st.checkbox(
                "Also judge the results the human judgments miss, and use those grades", False,
                key="evaluate_judge_unjudged",
                help="Human grades always win. Without it the judge grades only the results humans "
                "graded, to measure judge-vs-human agreement (Cohen's kappa)")
        fields["concurrency"] = int(st.number_input("LLM requests in flight", 1, 64, 4,
                                                    key="evaluate_llm_concurrency"))
        fields["judge"] = _judge_prompt()
        fields.update(_panel())
    return fields


def _panel() -> dict[str, Any]:
    """A panel of judges and their prices, as --judge-models and --judge-price take them."""
    left, right = st.columns(2)
    models = left.text_input(
        "Judges (optional): a panel, each grading every result", key="evaluate_judge_models",
        placeholder="gpt-4o-mini, qwen2.5@http://gpu:8000/v1",
        help="Model names on the endpoint above, or NAME@URL on another OpenAI-compatible endpoint "
        "(held to the same policy as the endpoint). Each judge's grades and calls are kept; Results' "
        "\"Can I trust the judge?\" says which decides as people do, for the least money. Empty: the model above")
    prices = right.text_input(
        "Judge prices (optional), US dollars per million tokens", key="evaluate_judge_prices",
        placeholder="gpt-4o-mini=0.15, qwen2.5=0", help="MODEL=PRICE for each judge, prompt and completion alike")
    return {"judge_models": tuple(m.strip() for m in models.split(",") if m.strip()),
            "judge_prices": tuple(p.strip() for p in prices.split(",") if p.strip())}


def _judge_prompt() -> Any:
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
