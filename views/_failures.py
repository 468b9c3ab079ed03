"""Results' failed-queries section (viewmodels/failures.py): the strategies that could not answer,
per strategy the two kinds of a failed top 1 and the causes, one strategy's failed queries (or all)
by kind or cause with what came back instead, and the failed queries in groups by meaning on a map
of the run's queries."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.engine.store import RunRecord
from searchgrade.viewmodels import failures as failures_model
from searchgrade.viewmodels.failures import ALL, STATUS, category_title
from searchgrade.views._common import chart_text, home, plain, resume_controls, store_for
from searchgrade.views._rating import rate_failed_results

#: The map's colour of each status (failures_model.STATUS; "failed" for every strategy at once).
STATUS_COLORS = {"relevant": "#b8c4cf", "judged_not_relevant": "#d62728", "unjudged": "#f0a030",
                 "judge_failed": "#9467bd", "unanswered": "#e5e5e5", "failed": "#d62728"}
KIND_KEYS = list(failures_model.KINDS)
CAUSE_KEYS = list(failures_model.CAUSES)


@st.cache_data(show_spinner="Reading why queries fail…", max_entries=32)
def _summary(path: str, run_id: str) -> failures_model.FailureSummary:
    return failures_model.failure_summary(store_for(path), run_id)


@st.cache_data(show_spinner=False, max_entries=64)
def _table(path: str, run_id: str, strategy: str):
    return failures_model.failure_table(store_for(path), run_id, strategy)


@st.cache_data(show_spinner="Grouping the failed queries…", max_entries=32)
def _groups(path: str, run_id: str, strategy: str) -> failures_model.FailureGroups:
    return failures_model.failure_groups(store_for(path), run_id, strategy)


def failed_strategies(run: RunRecord) -> None:
    """A complete run's strategies that failed on queries, each with its reason, and the button that
    retries only what failed (the other strategies' figures are complete)."""
    failures = _summary(home(), run.run_id).strategy_failures
    if not failures:
        return
    for failure in failures:
        st.warning(plain(f"{failure['text']}. The other strategies are complete."), icon=":material/error:")
    resume_controls(run, "failed_strategies")


def failures_section(run: RunRecord) -> None:
    """The failed-queries section of a complete run's Results page."""
    summary = _summary(home(), run.run_id)
    st.subheader("Failed queries: top result not relevant")
    st.caption(plain(
        f"A query fails for a strategy when its top result is not relevant: judged not relevant (grade below "
        f"{summary.threshold}), or unjudged (nobody graded it: a labelling gap, not a known search failure). A "
        "top result whose judgment failed is neither. Each failed query gets one cause, the first that holds, "
        "from what the run stored (docs/metrics.md, why queries fail); the kinds add up to the failed queries, "
        "and so do the causes."))
    if summary.strategy_failures:
        st.caption(plain("Not counted here, as they have no answer to judge: the queries a strategy could not "
                         "answer (" + "; ".join(f["text"] for f in summary.strategy_failures) + ")."))
        resume_controls(run, "results_retry")
    table = summary.table
    if table.empty:
        st.caption("No strategy returned results.")
        return
    counts = _counts(table)
    st.dataframe(counts, hide_index=True, key="results_failure_counts", height=35 * (len(counts) + 1) + 3)
    options = [ALL, *table["strategy"]]
    if st.session_state.get("results_failed_strategy") not in options:
        st.session_state["results_failed_strategy"] = summary.default or ALL
    left, right = st.columns([1, 3])
    strategy = left.selectbox("Failed on", options, key="results_failed_strategy",
                              format_func=lambda s: "All strategies" if s == ALL else strategy_label(s))
    failed = _table(home(), run.run_id, strategy)
    _by_category(failed, strategy, run, right)
    _groups_panel(run, strategy)
    if strategy != ALL:
        with st.expander("Rate these results"):
            rate_failed_results(run, strategy)


def _counts(table: pd.DataFrame) -> pd.DataFrame:
    """The counts with a column per strategy: queries answered, failed, then each kind and each
    cause (each group adding up to the failed), and top results whose judgment failed if any."""
    rows = [("Queries answered", "queries"), ("Failed", "failed"),
            *[(f"Kind · {category_title(k)}", k) for k in KIND_KEYS],
            *[(f"Cause · {category_title(c)}", c) for c in CAUSE_KEYS]]
    if table["judge_failed"].any():
        rows.append(("Top result's judgment failed (not counted as failed)", "judge_failed"))
    by_strategy = table.set_index("Strategy")
    return pd.DataFrame({"Failed queries": [name for name, _ in rows],
                         **{s: [int(by_strategy.loc[s, key]) for _, key in rows] for s in by_strategy.index}})


def _by_category(failed: pd.DataFrame, strategy: str, run: RunRecord, where: Any) -> None:
    """The failed queries, all or of one kind or cause (counted in the picker), with the note on
    unjudged top results."""
    counts = {key: int((failed[column] == key).sum()) if len(failed) else 0
              for column, keys in (("kind", KIND_KEYS), ("cause", CAUSE_KEYS)) for key in keys}
    options = ["", *[k for k in [*KIND_KEYS, *CAUSE_KEYS] if counts[k]]]
    key = "results_failed_category"
    if st.session_state.get(key) not in options:
        st.session_state[key] = ""
    category = where.selectbox(
        "Show", options, key=key,
        format_func=lambda c: f"Every failed query ({len(failed)})" if not c else
        f"{'Kind' if c in KIND_KEYS else 'Cause'}: {category_title(c)} ({counts[c]})")
    rows = failed if not category else failed[failed["kind" if category in KIND_KEYS else "cause"] == category]
    whose = "every strategy" if strategy == ALL else plain(strategy_label(strategy))
    what = "" if not category else f" · {category_title(category).lower()}"
    st.markdown(f"**{len(rows):,} failed quer{'y' if len(rows) == 1 else 'ies'}** of {whose}{plain(what)}")
    if category:
        meaning = (failures_model.KINDS.get(category) or failures_model.CAUSES[category])
        st.caption(plain(f"{category_title(category)}: {meaning.meaning}. What to do: {meaning.fix}."))
    if counts["unjudged"] and category in ("", "unjudged"):
        st.info(plain(f"{counts['unjudged']:,} of these top results are unjudged: a labelling gap, not a known "
                      "search failure. Fill it with the Review page's \"Fill the holes\" queue, or have the LLM "
                      f"judge grade them: searchgrade judge-pool {run.run_id} --pool-depth 1."),
                icon=":material/help:")
    st.dataframe(rows.drop(columns=["kind", "cause"]), hide_index=True, key="results_failed_table",
                 column_config={"Query": st.column_config.TextColumn(width="medium"),
                                "Evidence": st.column_config.TextColumn(width="large")})


def _groups_panel(run: RunRecord, strategy: str) -> None:
    """The failed queries in groups by meaning, and (when asked for) the map of the run's queries."""
    groups = _groups(home(), run.run_id, strategy)
    whose = "every strategy that answered it" if strategy == ALL else plain(strategy_label(strategy))
    st.markdown(f"**Failed queries grouped by meaning** ({groups.failed:,} quer"
                f"{'y' if groups.failed == 1 else 'ies'} failed by {whose})")
    how = ("their embeddings (the run's embedding model)" if groups.vectors == "embedding" else
           "their words (TF-IDF: this run stored no query vectors)")
    st.caption(plain(f"k-means over {how}; each group is named by the words its queries share that the "
                     "run's other queries rarely use."))
    if not groups.groups:
        st.caption("Too few failed queries to group: the table lists them all.")
        return
    top = {c: category_title(c) for c in CAUSE_KEYS}
    st.dataframe([{"Group": ", ".join(g["terms"]) or "(no shared word)", "Queries": g["size"],
                   "Main cause": top[max(g["causes"], key=g["causes"].get)] if g["causes"] else "",
                   "For example": " · ".join(g["examples"])} for g in groups.groups],
                 hide_index=True, key="results_failure_groups",
                 column_config={"For example": st.column_config.TextColumn(width="large")})
    if st.toggle("Show the map of the queries", key="results_failure_map_on",
                 help="Every query of the run in two dimensions, coloured by its top result, each group's "
                      "queries ringed. Computed the first time it is shown (a few seconds), then kept."):
        where = _query_map(home(), run.run_id)
        st.plotly_chart(_map(groups, where), key="results_failure_map")
        st.caption(plain(f"Map: {where.how} of the queries' vectors (near on the map: near in meaning). "
                         "Fill: the query's top result; ring: its group of failed queries."))


@st.cache_data(show_spinner="Drawing the map of the queries…", max_entries=16)
def _query_map(path: str, run_id: str) -> failures_model.QueryMap:
    return failures_model.query_map(store_for(path), run_id)


#: The ring around each group's queries on the map (none of the statuses' colours).
GROUP_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#393b79", "#bcbd22")


def _map(groups: failures_model.FailureGroups, where: failures_model.QueryMap) -> go.Figure:
    """Every query on the map, filled by its status; each group's queries ringed in the group's
    colour and named at their middle."""
    figure = go.Figure()
    points = where.points.assign(status=where.points["query_id"].map(groups.status).fillna("unanswered"))
    grouped = {q: n for n, g in enumerate(groups.groups) for q in g["query_ids"]}
    points["group"] = points["query_id"].map(grouped)
    for status, frame in points[points["group"].isna()].groupby("status", sort=False):
        name = "Failed on every strategy" if status == "failed" else STATUS[status]
        figure.add_scatter(x=frame["x"].tolist(), y=frame["y"].tolist(), mode="markers", name=name,
                           marker={"color": STATUS_COLORS[status], "size": 7, "line": {"width": 0}},
                           customdata=[[chart_text(t[:90])] for t in frame["text"]],
                           hovertemplate="%{customdata[0]}<extra>" + chart_text(name) + "</extra>")
    for n, g in enumerate(groups.groups):
        frame = points[points["group"] == n]
        terms = chart_text(", ".join(g["terms"]) or f"group {n + 1}")
        color = GROUP_COLORS[n % len(GROUP_COLORS)]
        figure.add_scatter(
            x=frame["x"].tolist(), y=frame["y"].tolist(), mode="markers", name=f"{terms} ({len(frame)})",
            marker={"color": [STATUS_COLORS[s] for s in frame["status"]], "size": 9,
                    "line": {"width": 2.5, "color": color}},
            customdata=[[chart_text(t[:90]), chart_text(STATUS.get(s, "Failed on every strategy"))]
                        for t, s in zip(frame["text"], frame["status"], strict=True)],
            hovertemplate="%{customdata[0]}<br>%{customdata[1]}<extra>" + terms + "</extra>")
        figure.add_annotation(x=float(frame["x"].median()), y=float(frame["y"].median()), text=terms,
                              showarrow=False, font={"size": 12, "color": color}, bgcolor="rgba(255,255,255,0.75)")
    for status in dict.fromkeys(points.loc[points["group"].notna(), "status"]):
        # What a grouped query's fill means, in the key (its trace is its group's).
        if status not in set(points.loc[points["group"].isna(), "status"]):
            figure.add_scatter(x=[None], y=[None], mode="markers", marker={"color": STATUS_COLORS[status], "size": 7},
                               name="Failed on every strategy" if status == "failed" else STATUS[status])
    figure.update_layout(height=560, margin={"t": 20}, xaxis={"visible": False}, yaxis={"visible": False},
                         legend={"orientation": "h", "y": -0.05}, meta={"chart": "failure_map"})
    return figure
