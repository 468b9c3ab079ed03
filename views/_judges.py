""""Can I trust the judge?" on Results and Review: the judge's decisions against people's first,
then its stability, then its item agreement (with the trust panel's kappas and judge-corrected
figures), what each judge costs and which to use (viewmodels/judges.py)."""

from __future__ import annotations

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.store import RunRecord
from searchgrade.viewmodels import judges as judges_model
from searchgrade.viewmodels.common import Sentence, is_llm_run
from searchgrade.views._common import home, plain, store_for
from searchgrade.views._trust import SHOW, trust_section


@st.cache_data(show_spinner="Measuring the judge's decisions against people's…", max_entries=16)
def judges_view(path: str, run_id: str, metric: str, version: str) -> judges_model.JudgesView | str:
    """The section's view, or the one line saying why there is none. ``version`` (the newest
    rating, the repeats and calibrations stored) keys the cache: new ratings show on the next rerun."""
    try:
        return judges_model.judges_view(store_for(path), run_id, metric)
    except SearchGradeError as exc:
        return str(exc)


def judges_section(run: RunRecord, metric: str, k: int, key: str) -> None:
    """The section, for a run whose results a judge graded (nothing otherwise)."""
    if not is_llm_run(run):
        return
    st.subheader("Can I trust the judge?")
    store = store_for(home())
    decided_on, why = judges_model.page_metric(metric, k)
    if why:
        st.caption(plain(why))
    version = f"{store.latest_label_time(run.collection_name)}|{store.judges_version(run.run_id)}"
    view = judges_view(home(), run.run_id, decided_on, version)
    if isinstance(view, str):
        st.info(plain(view))
        trust_section(run, metric, k, heading=False)
        return
    report = view.report
    st.caption(plain(f"People's grades: {report.people_source}. Decisions are read on {view.metric}, over the "
                     f"queries whose top {report.k} of every strategy people and every judge graded; every interval "
                     "is a 95% bootstrap interval over queries."))
    _first_then_rest(view.decisions, "Every judge's decisions in words")
    if not view.differing.empty:
        with st.expander(f"The comparisons a judge decides differently from people ({len(view.differing)})"):
            st.dataframe(view.differing, hide_index=True, key=f"{key}_judges_differing")
    for sentence in view.suite_sentences:
        SHOW[sentence.kind](plain(sentence.text))
    st.markdown("**Does it say the same thing twice?**")
    _first_then_rest(view.stability, "Every judge's stability", warnings_in_sight=True)
    st.markdown("**Does it grade each result as people do?**")
    _first_then_rest(view.item, "Every judge's agreement with people, result by result")
    st.markdown("**Every judge, and which one to use**")
    st.dataframe(view.table, hide_index=True, key=f"{key}_judges_table")
    SHOW[view.recommendation.kind](plain(view.recommendation.text))
    for note in report.notes:
        st.caption(plain(note))
    if view.calibrations:
        with st.expander("Calibrated judge prompts (people's rated examples in the prompt)"):
            for c in view.calibrations:
                st.caption(plain(f"{c['prompt_version']} for {c['judge']}, {c['created_at'][:16]}: {c['why']} "
                                 f"(cross-fitted over {c['folds']} folds, {c['queries']} queries, {c['pairs']} pairs)."))
            kept = next((c for c in view.calibrations if c["kept"]), None)
            if kept is not None:
                text = next(r["prompt_text"] for r in store.judge_calibrations(run.run_id)
                            if r["calibration_id"] == kept["calibration_id"])
                st.download_button("Download the kept prompt", data=text, file_name=f"{kept['prompt_version']}.txt",
                                   mime="text/plain", key=f"{key}_judges_prompt", on_click="ignore")
    trust_section(run, metric, k, heading=False)


def _first_then_rest(sentences: list[Sentence], label: str, *, warnings_in_sight: bool = False) -> None:
    """The run's judge's sentence, then the other judges' in an expander; with ``warnings_in_sight``,
    another judge's warning (a judge whose noise outweighs its differences) is shown too."""
    if not sentences:
        return
    first, *rest = sentences
    SHOW[first.kind](plain(first.text))
    for sentence in (s for s in rest if warnings_in_sight and s.kind == "warn"):
        SHOW[sentence.kind](plain(sentence.text))
    if rest:
        with st.expander(label):
            for sentence in rest:
                SHOW[sentence.kind](plain(sentence.text))
