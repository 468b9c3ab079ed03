"""The Results page's "How far to trust the judge": agreement with people, the verdict in words,
and the judge-corrected (prediction-powered) estimates beside the LLM-only figures."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from searchgrade.engine.store import RunRecord
from searchgrade.viewmodels import trust as trust_model
from searchgrade.viewmodels.common import METRIC_LABELS, metric_label
from searchgrade.viewmodels.trust import Estimate, JudgeVsHuman
from searchgrade.views._common import home, plain, store_for

SHOW = {"good": st.success, "warn": st.warning, "info": st.info}


@st.cache_data(show_spinner="Measuring the judge against people's ratings…", max_entries=32)
def trust_panel(path: str, run_id: str, metric: str, k: int, labels_version: str) -> trust_model.TrustPanel:
    # labels_version (the newest rating's time) keys the cache: a new rating shows on the next rerun.
    return trust_model.trust_panel(store_for(path), run_id, metric, k)


def _cell(count: int, share: Estimate) -> str:
    if share.value is None:
        return f"{count}"
    interval = f", {share.low:.0%}–{share.high:.0%}" if share.low is not None else ""
    return f"{count} ({share.value:.0%}{interval})"


def confusion_frame(judge: JudgeVsHuman) -> pd.DataFrame:
    """Counts per (judge grade, people's grade), with the column share and its CI in brackets."""
    rows = {f"Judge {g}": [_cell(judge.confusion[i][j], judge.column_share[i][j]) for j in range(len(judge.labels))]
            for i, g in enumerate(judge.labels)}
    return pd.DataFrame.from_dict(rows, orient="index", columns=[f"People {g}" for g in judge.labels])


def _ci(low: float | None, high: float | None) -> str:
    return "" if low is None or pd.isna(low) else f"{low:.3f} to {high:.3f}"


def trust_section(run: RunRecord, metric: str, k: int, *, heading: bool = True) -> None:
    """The judge against people's ratings and the judge-corrected figures; under "Can I trust the
    judge?" (views/_judges.py) without a heading of its own."""
    if not trust_model.has_judge_grades(run):
        return
    if heading:
        st.subheader("How far to trust the judge")
    else:
        st.markdown("**The judge against people's ratings, and the figures it corrects**")
    store = store_for(home())
    version = str(store.latest_label_time(run.collection_name))
    panel = trust_panel(home(), run.run_id, metric, k, version)
    if panel.rated_pairs == 0:
        st.info("Nobody has rated this run's results yet. Rate results in the query drill-down, or start a "
                "blind review on the Review page: the judge is then measured against people, and every "
                "metric gets a judge-corrected estimate.")
        st.page_link("views/review.py", label="Start a blind review", icon=":material/rate_review:")
        return
    for sentence in panel.verdict:
        SHOW[sentence.kind](plain(sentence.text))
    judge = panel.judge
    if judge is not None and judge.n_pairs:
        cols = st.columns(4)
        for col, title, estimate, fmt in (
            (cols[0], "Weighted kappa (linear)", judge.kappa_linear, "{:.2f}"),
            (cols[1], "Weighted kappa (quadratic)", judge.kappa_quadratic, "{:.2f}"),
            (cols[2], "Exact agreement", judge.exact, "{:.0%}"),
            (cols[3], "Bias (judge − people)", judge.bias, "{:+.2f}"),
        ):
            value = "–" if estimate.value is None else fmt.format(estimate.value)
            ci = (f"95% CI {fmt.format(estimate.low)} to {fmt.format(estimate.high)}"
                  if estimate.low is not None else "no interval")
            col.metric(title, value, help=ci, border=True)
            col.caption(ci)
        st.caption(f"Pairs per judge grade (rows) and people's grade (columns), on {judge.n_pairs} pairs of "
                   f"{judge.n_queries} queries; in brackets, the share of that column with its 95% CI "
                   "(bootstrap over queries).")
        st.dataframe(confusion_frame(judge), key="results_trust_confusion")
    if panel.raters is None:
        st.caption("Agreement between people: needs two people rating the same pairs (none yet).")
    name = metric_label(metric, k)
    st.markdown(f"**Judge-corrected {plain(name)}** beside the LLM-only figure (prediction-powered "
                "inference, Angelopoulos et al. 2023: the LLM mean over all queries corrected by the mean "
                "people-minus-judge difference on the queries people rated in full)")
    if panel.corrected.empty:
        st.caption("Needs at least 2 queries whose top-k results people rated in full: on the Review page, "
                   "start a review in the mode “whole queries”.")
    else:
        table = panel.corrected
        shown = pd.DataFrame({
            "Strategy": table["Strategy"], "LLM-only": table["LLM-only"],
            "LLM-only 95% CI": [_ci(a, b) for a, b in zip(table["LLM CI low"], table["LLM CI high"], strict=True)],
            "Judge-corrected": table["Corrected"],
            "Corrected 95% CI": [_ci(a, b) for a, b in zip(table["CI low"], table["CI high"], strict=True)],
            "Rated queries": table["Rated queries"], "Queries": table["Queries"]})
        st.dataframe(shown, hide_index=True, key="results_trust_corrected",
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in ("LLM-only", "Judge-corrected")})
        with st.expander("Every metric, judge-corrected"):
            wide = panel.corrected_all.assign(
                Metric=panel.corrected_all["metric"].map(lambda m: METRIC_LABELS.get(m, m)),
                value=[f"{c:.3f} ({lo:.3f} to {hi:.3f}) vs {llm:.3f}" for c, lo, hi, llm in
                       panel.corrected_all[["corrected", "ci_low", "ci_high", "llm"]].itertuples(index=False)])
            st.dataframe(wide.pivot(index="Metric", columns="strategy", values="value"),
                         key="results_trust_all")
            st.caption("Each cell: judge-corrected estimate (95% CI) vs the LLM-only mean.")
    for note in panel.notes:
        st.caption(plain(note))
