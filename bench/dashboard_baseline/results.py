"""The Results screen: one run at a metric and cut-off, with the headline, per-strategy tables
and charts, best and worst queries, failed queries and latency."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bench.dashboard_baseline.common import (
    PRIMARY_METRIC,
    WITH,
    WITHOUT,
    Sentence,
    check_cutoff,
    is_llm_run,
    metric_label,
    metric_rows,
    primary_k,
)
from bench.dashboard_baseline.llm_panel import LLMPanel, llm_panel
from bench.dashboard_baseline.recommendations import recommendations
from bench.dashboard_baseline.recompute import per_query_values, summary
from bench.dashboard_baseline.significance import reranker_tests, significance
from searchgrade.engine.run.strategies import (
    base_strategies,
    display_rank,
    label,
    reranked_of,
    strategy_order,
)
from searchgrade.engine.store import RunRecord, Store


@dataclass
class Headline:
    metric: str
    value: float
    ci_low: float
    ci_high: float
    strategy: str
    label: str
    n_queries: int


@dataclass
class ResultsView:
    """Everything the results page shows for one run, metric and k."""

    run: RunRecord
    metric: str
    k: int
    headline: Headline | None
    strategies: list[str]
    #: strategy, label, value, ci_low, ci_high, n for the selected metric.
    metric_summary: pd.DataFrame
    #: base label x (Without reranker, With reranker) for the selected metric and for mean relevance.
    metric_table: pd.DataFrame
    relevance_table: pd.DataFrame
    #: strategy, label, rank, mean_grade
    by_position: pd.DataFrame
    best_queries: pd.DataFrame
    worst_queries: pd.DataFrame
    reranker_table: pd.DataFrame
    distribution: pd.DataFrame
    failed_counts: pd.DataFrame
    significance: list[Sentence]
    recommendations: list[Sentence]
    latency: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    #: The LLM's part of the run (judge, calls, failures, source found, agreement); None without LLM.
    llm: LLMPanel | None = None


def results_view(store: Store, run_id: str, metric: str = PRIMARY_METRIC, k: int | None = None,
                 n_queries: int = 10) -> ResultsView:
    """The results page for one run at metric@k (k defaults to the headline's k)."""
    run = store.get_run(run_id)
    k = k if k is not None else primary_k(run)
    check_cutoff(run, k)
    table = summary(store, run, k)
    strategies = strategy_order(table["strategy"].unique().tolist())
    selected = metric_rows(table, metric)
    hk = primary_k(run)
    head_table = table if hk == k else summary(store, run, hk)
    headline = _headline(head_table, hk, len(store.queries(run.run_id)))
    tests = reranker_tests(store, run, metric, k)
    means = query_means(store, run, "mean_relevance", k)
    # A small run lists each query once: at most half are "best", the worst come from the rest.
    best = means.sort_values(["mean_value", "query_id"], ascending=[False, True]).head(
        min(n_queries, (len(means) + 1) // 2))
    worst = means[~means["query_id"].isin(best["query_id"])].sort_values(["mean_value", "query_id"]).head(
        n_queries)
    view = ResultsView(
        run=run,
        metric=metric,
        k=k,
        headline=headline,
        strategies=strategies,
        metric_summary=selected,
        metric_table=with_without(selected),
        relevance_table=with_without(metric_rows(table, "mean_relevance")),
        by_position=relevance_by_position(store, run, k),
        best_queries=best,
        worst_queries=worst,
        reranker_table=tests,
        distribution=relevance_distribution(table, run),
        failed_counts=failed_counts(store, run),
        significance=significance(store, run, metric, k, selected),
        recommendations=[],
        latency=latency(store, run),
        notes=list(run.notes),
        llm=llm_panel(store, run, table) if is_llm_run(run) else None,
    )
    view.recommendations = recommendations(store, run, view)
    return view


def _headline(table: pd.DataFrame, k: int, n_queries: int) -> Headline | None:
    rows = metric_rows(table, PRIMARY_METRIC)
    if rows.empty:
        return None
    # Ties go to the strategy listed first: baselines before rerankers, the cheaper choice.
    best = rows.loc[rows["value"].idxmax()]
    return Headline(metric_label(PRIMARY_METRIC, k), float(best["value"]), float(best["ci_low"]),
                    float(best["ci_high"]), best["strategy"], best["label"], n_queries)


def with_without(rows: pd.DataFrame) -> pd.DataFrame:
    """Per retrieval strategy: the value without and with the reranker, and the change."""
    out = []
    values = dict(zip(rows["strategy"], rows["value"], strict=True))
    for base in base_strategies():
        without, with_ = values.get(base), values.get(reranked_of(base))
        if without is None and with_ is None:
            continue
        change = with_ - without if without is not None and with_ is not None else None
        out.append({"Strategy": label(base), WITHOUT: without, WITH: with_, "Change": change})
    return pd.DataFrame(out, columns=["Strategy", WITHOUT, WITH, "Change"])


def bar_series(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The bar chart's two series (without, with reranker): Strategy, value, err_plus, err_minus."""
    series: dict[str, pd.DataFrame] = {}
    by_strategy = rows.set_index("strategy")
    for name, pick in ((WITHOUT, lambda b: b), (WITH, lambda b: reranked_of(b))):
        out = []
        for base in base_strategies():
            s = pick(base)
            if s in by_strategy.index:
                r = by_strategy.loc[s]
                out.append({"Strategy": label(base), "strategy": s, "value": r["value"],
                            "err_plus": r["ci_high"] - r["value"], "err_minus": r["value"] - r["ci_low"],
                            "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
        if out:
            series[name] = pd.DataFrame(out)
    return series


def relevance_by_position(store: Store, run: RunRecord, k: int) -> pd.DataFrame:
    """Mean grade at each rank per strategy: unjudged as 0, failed judgments left out (as in the
    stored mean relevance); columns strategy, rank, mean_grade, n, judge_failed, label."""
    frame = pd.DataFrame(store.position_means(run.run_id, k),
                         columns=["strategy", "rank", "mean_grade", "n", "judge_failed"])
    frame["order"] = frame["strategy"].map(display_rank)
    frame = frame.sort_values(["order", "strategy", "rank"]).drop(columns="order").reset_index(drop=True)
    frame["label"] = frame["strategy"].map(label)
    return frame


def query_means(store: Store, run: RunRecord, metric: str, k: int) -> pd.DataFrame:
    """Per query: the metric averaged over strategies, and the best and worst strategy for it."""
    rows = store.query_metric_means(run.run_id, metric, k)
    columns = ["query_id", "mean_value", "text", "query_type", "max_value", "best_strategy",
               "min_value", "worst_strategy"]
    if rows:
        frame = pd.DataFrame(rows)[columns]
    else:
        values = per_query_values(store, run, metric, k)
        queries = pd.DataFrame(store.queries(run.run_id), columns=["query_id", "text", "query_type",
                                                                  "source_doc_id"])
        if values.empty:
            return pd.DataFrame(columns=columns)
        grouped = values.groupby("query_id")["value"]
        frame = pd.DataFrame({
            "mean_value": grouped.mean(), "max_value": grouped.max(), "min_value": grouped.min(),
            "best_strategy": values.loc[grouped.idxmax(), ["query_id", "strategy"]].set_index(
                "query_id")["strategy"],
            "worst_strategy": values.loc[grouped.idxmin(), ["query_id", "strategy"]].set_index(
                "query_id")["strategy"],
        }).reset_index().merge(queries, on="query_id")[columns]
    frame["best_strategy"] = frame["best_strategy"].map(label)
    frame["worst_strategy"] = frame["worst_strategy"].map(label)
    return frame


def relevance_distribution(table: pd.DataFrame, run: RunRecord) -> pd.DataFrame:
    """Per strategy: share of top-k results highly relevant (3), relevant (>= threshold), not relevant."""
    wide = table.pivot(index="strategy", columns="metric", values="value")
    columns = {"pct_relevant": f"% relevant (grade ≥ {run.threshold})",
               "pct_not_relevant": f"% not relevant (grade < {run.threshold})",
               "judged": "% judged"}
    if run.grade_max is None or run.grade_max >= 3:
        columns = {"pct_highly_relevant": "% highly relevant (grade 3)", **columns}
    out = pd.DataFrame({"Strategy": [label(s) for s in strategy_order(wide.index.tolist())]})
    ordered = strategy_order(wide.index.tolist())
    for metric, title in columns.items():
        if metric in wide:
            out[title] = [100.0 * wide.loc[s, metric] for s in ordered]
    return out


def failed_counts(store: Store, run: RunRecord) -> pd.DataFrame:
    frame = pd.DataFrame(store.failed_top1_counts(run.run_id),
                         columns=["strategy", "failed", "unjudged", "judge_failed", "n"])
    frame["order"] = frame["strategy"].map(display_rank)
    frame = frame.sort_values("order").drop(columns="order").reset_index(drop=True)
    frame.insert(0, "Strategy", frame["strategy"].map(label))
    return frame


def failed_queries(store: Store, run_id: str, strategy: str) -> pd.DataFrame:
    """Queries whose top-1 result from `strategy` is graded 0 (or unjudged, counted as 0).

    One row per query: its id, text and type, then each strategy's top-1 result as
    "[grade] title (doc id)", so a reader sees what came back instead. A top 1 whose judgment
    failed shows "[judge failed]", never a grade, and does not make its query a failed one.
    """
    rows = store.failed_top1(run_id, strategy)
    if not rows:
        labels = [label(s) for s in strategy_order(store.result_strategies(run_id))]
        return pd.DataFrame(columns=["Query id", "Query", "Type", *labels])
    frame = pd.DataFrame(rows)
    frame["cell"] = [_result_cell(r.grade, r.title, r.doc_id, bool(r.judge_failed))
                     for r in frame.itertuples()]
    wide = frame.pivot(index=["query_id", "text", "query_type"], columns="strategy", values="cell")
    # The strategy whose top 1 failed comes first: it is what the table is about.
    others = [s for s in strategy_order(wide.columns.tolist()) if s != strategy]
    wide = wide[[strategy, *others]]
    wide.columns = [label(s) for s in wide.columns]
    wide = wide.reset_index().rename(columns={"query_id": "Query id", "text": "Query",
                                              "query_type": "Type"})
    return wide.fillna("(no results)")


def _result_cell(grade: Any, title: Any, doc_id: str, judge_failed: bool = False) -> str:
    if judge_failed:
        shown: Any = "judge failed"
    elif grade is None or (isinstance(grade, float) and math.isnan(grade)):
        shown = "unjudged"
    else:
        shown = int(grade)
    title = title if isinstance(title, str) and title else doc_id
    return f"[{shown}] {title[:80]} ({doc_id})"


def latency(store: Store, run: RunRecord) -> pd.DataFrame:
    frame = pd.DataFrame(store.latency_summary(run.run_id), columns=["strategy", "p50_ms", "p95_ms", "n"])
    frame.insert(0, "Strategy", frame["strategy"].map(label))
    return frame
