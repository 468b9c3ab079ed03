"""Results: train a reranker on the run's grades, follow it, and read its held-out figures."""

from __future__ import annotations

import re

import streamlit as st

from searchgrade.engine.store import RunRecord
from searchgrade.engine.training.reranker import RerankerTrainingConfig
from searchgrade.server import jobs
from searchgrade.viewmodels.reranker import NEVER_SAW, card_figures, trained_rerankers
from searchgrade.views._common import get_store, home, plain

_FIGURES = {c: st.column_config.NumberColumn(format="%.4f") for c in ("Base", "Reranked")} | {
    c: st.column_config.NumberColumn(format="%+.4f") for c in ("Change", "CI low", "CI high")} | {
    "p (Holm)": st.column_config.NumberColumn(
        format="%.4f", help="As the reranker's card states it (Holm-adjusted, from the card's own test). The "
                            "verdict follows the interval shown beside it: significant exactly when it excludes 0.")}


def _default_name(run: RunRecord) -> str:
    slug = re.sub(r"[^a-z0-9_.-]+", "-", run.collection_name.lower()).strip("-.") or "run"
    return f"{slug[:40]}-{run.run_id[:6].lower()}"


def _stage_text(stage: jobs.StageProgress) -> str:
    text = f"{stage.stage}: {stage.done:,} / {stage.total:,}" if stage.total > 1 else stage.stage
    left = stage.remaining_s
    if left is not None:
        text += f" · about {left / 60:.0f} min left" if left >= 90 else f" · about {left:.0f} s left"
    return text


@st.fragment(run_every=2.0)
def _live(job_id: str) -> None:
    job = jobs.snapshot(job_id)
    if job is None:
        return
    if not job.active:
        st.rerun()
    st.markdown(f"**Training reranker {plain(job.reranker or '')}** · {job.elapsed_s:.0f} s")
    for stage in job.stages.values():
        st.progress(stage.fraction, text=plain(_stage_text(stage)))
    st.caption("Training continues if you close or refresh this tab.")


def _card(card: dict) -> None:
    held = card["heldout"]
    st.markdown(f"**{plain(card['name'])}**: {held['queries']:,} queries, {NEVER_SAW} "
                f"({plain(held['scored_by'])}); top {held['depth']} of each strategy rescored; "
                f"trained in {card['timings']['train_s']:.0f} s.")
    st.dataframe(card_figures(card), hide_index=True, column_config=_FIGURES,
                 key=f"results_reranker_{card['name']}")
    if card.get("blend"):
        with st.expander("The cross-encoder alone, without the blend with the base ranking"):
            st.dataframe(card_figures(card, alone=True), hide_index=True, column_config=_FIGURES,
                         key=f"results_reranker_alone_{card['name']}")
    st.caption(plain(f"Use it: searchgrade evaluate ... --reranker-model trained:{card['name']} "
                     f"(model card: rerankers/{card['name']}/README.md in the data directory)"))


def train_section(run: RunRecord) -> None:
    """The "Train a reranker on these grades" part of a complete run's Results."""
    st.subheader("Train a reranker on these grades")
    st.caption("A cross-encoder (the first 3 layers of the packaged all-MiniLM-L6-v2, with a fresh "
               "scoring head) learns from "
               "this run's grades, with hard negatives from the strategies' deeper results. Each query "
               "is reranked only by a model trained on the other folds of queries, so the figures are "
               f"{NEVER_SAW}. It takes minutes on a small CPU.")
    job = jobs.latest_job()
    mine = job is not None and job.kind == "train" and job.run_id == run.run_id
    if mine and job.active:
        _live(job.job_id)
        return
    if mine and job.state == "failed":
        st.error(plain(f"Training {job.reranker} failed: {job.error}"))
    cards = [c for c in trained_rerankers(home()) if c.get("source_run", {}).get("run_id") == run.run_id]
    for card in cards:
        _card(card)
    active = jobs.active_job()
    with st.form("results_train_form", border=True):
        name = st.text_input("Name", _default_name(run), key="results_train_name",
                             help="lower-case letters, digits, '.', '_' or '-'")
        folds = st.selectbox("Folds", [3, 5, 10], index=1, key="results_train_folds")
        replace = st.checkbox("Replace a reranker of the same name", key="results_train_replace")
        start = st.form_submit_button("Train a reranker", type="primary", disabled=active is not None)
    if active is not None:
        st.caption("Another job is running; training can start when it ends.")
    if start:
        try:
            config = RerankerTrainingConfig(name=name.strip(), folds=int(folds), replace=replace)
            config.validate()
        except Exception as exc:  # noqa: BLE001 - a bad name is the user's to fix, shown in one line
            st.error(plain(str(exc)))
            return
        _, started = jobs.start_training(run.run_id, config, get_store(), home(),
                                         label=run.collection_name)
        if not started:
            st.toast("Another job is running: training was not started.")
        st.rerun()
