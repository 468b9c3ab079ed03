"""The dashboard's view model: what each page shows, computed from the run store.

Pages call these functions and draw what they return; they never compute a metric or write SQL.
Everything here reads stored runs through :class:`engine.store.Store` (SQL aggregates there, on
long tables) and returns pandas frames or small dataclasses. Metrics at a cut-off the run did not
store are recomputed from the stored ranked grades with :func:`engine.metrics.compute_metrics`,
never by searching or judging again. No Streamlit here: caching is the pages' business.
"""

from __future__ import annotations

import io
import math
import re
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from engine.store import RunRecord, Store
from engine.types import BASE_STRATEGIES, STRATEGIES, STRATEGY_LABELS, SearchGradeError

#: The headline metric: DCG at 10 (or at the run's depth when it retrieved fewer).
PRIMARY_METRIC = "dcg"
PRIMARY_K = 10
#: A paired difference with p below this is called significant.
ALPHA = 0.05
#: Resamples of the paired tests the dashboard runs (the stored CIs use the run's own setting).
PAIRED_RESAMPLES = 5_000
#: Resamples of the CIs of metrics recomputed at a cut-off the run did not store.
RECOMPUTE_RESAMPLES = 1_000

METRIC_LABELS = {
    "dcg": "DCG",
    "ndcg": "NDCG",
    "precision": "Precision",
    "recall": "Recall",
    "recall_single_hit": "Recall (single hit)",
    "mrr": "MRR",
    "map": "MAP",
    "mean_relevance": "Mean relevance",
    "judged": "Judged share",
    "pct_highly_relevant": "Share highly relevant",
    "pct_relevant": "Share relevant",
    "pct_not_relevant": "Share not relevant",
}
RERANKED_OF = {base: f"{base}_rerank" for base in BASE_STRATEGIES}
BASE_OF = {reranked: base for base, reranked in RERANKED_OF.items()}
WITHOUT, WITH = "Without reranker", "With reranker"


def metric_label(metric: str, k: int) -> str:
    """ "DCG@10", "Mean relevance@5"."""
    return f"{METRIC_LABELS.get(metric, metric)}@{k}"


def strategy_label(strategy: str) -> str:
    return STRATEGY_LABELS.get(strategy, strategy)


def _ordered(strategies: Sequence[str]) -> list[str]:
    known = [s for s in STRATEGIES if s in strategies]
    return known + sorted(s for s in strategies if s not in STRATEGIES)


# -- runs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunChoice:
    run_id: str
    label: str
    status: str
    collection_name: str


def run_label(run: RunRecord) -> str:
    """What the run dropdowns show: name, date and collection (and the status when not complete).

    Parts the name already holds (the default name is collection and date) are not repeated.
    """
    parts = [run.name]
    date = f"{run.created_at:%Y-%m-%d %H:%M}"
    if date not in run.name:
        parts.append(date)
    if run.collection_name not in run.name:
        parts.append(run.collection_name)
    label = " · ".join(parts)
    return label if run.status == "complete" else f"{label} ({run.status})"


def skipped_messages(skipped: dict[str, str]) -> list[str]:
    """One line per distinct reason: "ANN + reranker, Hybrid + reranker were skipped: <reason with the fix>"."""
    by_reason: dict[str, list[str]] = {}
    for strategy in _ordered(list(skipped)):
        by_reason.setdefault(skipped[strategy], []).append(strategy_label(strategy))
    return [f"{', '.join(names)} {'was' if len(names) == 1 else 'were'} skipped: {reason}"
            for reason, names in by_reason.items()]


def run_choices(store: Store, *, complete_only: bool = False,
                collection_name: str | None = None) -> list[RunChoice]:
    """Runs for a dropdown, newest first."""
    return [
        RunChoice(r.run_id, run_label(r), r.status, r.collection_name)
        for r in store.list_runs(collection_name)
        if r.status == "complete" or not complete_only
    ]


def primary_k(run: RunRecord) -> int:
    return min(PRIMARY_K, run.depth)


def stored_cutoffs(store: Store, run_id: str) -> list[int]:
    return sorted({r["k"] for r in store.metric_summary(run_id)})


# -- metric values (stored, or recomputed from stored grades) ----------------------------------


def per_query_values(store: Store, run: RunRecord, metric: str, k: int) -> pd.DataFrame:
    """One metric per strategy and query: columns strategy, query_id, value."""
    _check_k(run, k)
    rows = store.metric_values(run.run_id, metric, k)
    if rows or k in stored_cutoffs(store, run.run_id):
        return pd.DataFrame(rows, columns=["strategy", "query_id", "metric", "k", "value"])[
            ["strategy", "query_id", "value"]]
    return recompute_values(store, run, [metric], k)[["strategy", "query_id", metric]].rename(
        columns={metric: "value"})


def recompute_values(store: Store, run: RunRecord, metrics: Sequence[str], k: int) -> pd.DataFrame:
    """Metrics at cut-off k recomputed from the stored results and grades: one row per strategy and query.

    A query a strategy returned nothing for gets the metrics of an empty ranking.
    """
    from engine.metrics import compute_metrics

    _check_k(run, k)
    pools = store.grade_pools(run.run_id)
    ranked = {(r["strategy"], r["query_id"]): r["grades"] for r in store.ranked_grades(run.run_id, k)}
    query_ids = [q["query_id"] for q in store.queries(run.run_id)]
    rows = []
    for strategy in _ordered(store.result_strategies(run.run_id)):
        for qid in query_ids:
            values = compute_metrics(ranked.get((strategy, qid), []), pools.get(qid, []), k,
                                     run.threshold, names=metrics)
            rows.append({"strategy": strategy, "query_id": qid, **values})
    return pd.DataFrame(rows, columns=["strategy", "query_id", *metrics])


def summary(store: Store, run: RunRecord, k: int) -> pd.DataFrame:
    """Every metric per strategy at cut-off k with its 95% CI: strategy, metric, value, ci_low, ci_high, n.

    Stored summaries are read; a cut-off the run did not store is recomputed from stored grades.
    """
    from engine.metrics import METRIC_NAMES
    from engine.statistics import bootstrap_ci

    _check_k(run, k)
    columns = ["strategy", "metric", "value", "ci_low", "ci_high", "n"]
    rows = store.metric_summary(run.run_id, k)
    if rows:
        return pd.DataFrame(rows)[columns]
    values = recompute_values(store, run, METRIC_NAMES, k)
    out = []
    for strategy, group in values.groupby("strategy", sort=False):
        for metric in METRIC_NAMES:
            ci = bootstrap_ci(group[metric].to_numpy(), n_resamples=RECOMPUTE_RESAMPLES, seed=0)
            out.append((strategy, metric, ci.mean, ci.low, ci.high, len(group)))
    return pd.DataFrame(out, columns=columns)


def _check_k(run: RunRecord, k: int) -> None:
    if not 1 <= k <= run.depth:
        raise SearchGradeError(
            f"k of {k} is outside 1..{run.depth}: run {run.run_id} kept {run.depth} results per "
            "query; pick a k up to that"
        )


# -- the results page --------------------------------------------------------------------------


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
class Sentence:
    """A finding in words, with how much it matters ("good", "warn", "info")."""

    text: str
    kind: str = "info"
    #: The strategy a comparison is about, when it is one.
    subject: str | None = None


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


def results_view(store: Store, run_id: str, metric: str = PRIMARY_METRIC, k: int | None = None,
                 n_queries: int = 10) -> ResultsView:
    """The results page for one run at metric@k (k defaults to the headline's k)."""
    run = store.get_run(run_id)
    k = k if k is not None else primary_k(run)
    _check_k(run, k)
    table = summary(store, run, k)
    strategies = _ordered(table["strategy"].unique().tolist())
    selected = _metric_rows(table, metric)
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
        relevance_table=with_without(_metric_rows(table, "mean_relevance")),
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
    )
    view.recommendations = recommendations(store, run, view)
    return view


def _metric_rows(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    rows = table[table["metric"] == metric].drop(columns="metric").copy()
    rows["order"] = rows["strategy"].map({s: i for i, s in enumerate(STRATEGIES)}).fillna(99)
    rows = rows.sort_values(["order", "strategy"]).drop(columns="order").reset_index(drop=True)
    rows.insert(1, "label", rows["strategy"].map(strategy_label))
    return rows


def _headline(table: pd.DataFrame, k: int, n_queries: int) -> Headline | None:
    rows = _metric_rows(table, PRIMARY_METRIC)
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
    for base in BASE_STRATEGIES:
        without, with_ = values.get(base), values.get(RERANKED_OF[base])
        if without is None and with_ is None:
            continue
        change = with_ - without if without is not None and with_ is not None else None
        out.append({"Strategy": strategy_label(base), WITHOUT: without, WITH: with_, "Change": change})
    return pd.DataFrame(out, columns=["Strategy", WITHOUT, WITH, "Change"])


def bar_series(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The bar chart's two series (without, with reranker): Strategy, value, err_plus, err_minus."""
    series: dict[str, pd.DataFrame] = {}
    by_strategy = rows.set_index("strategy")
    for name, pick in ((WITHOUT, lambda b: b), (WITH, lambda b: RERANKED_OF[b])):
        out = []
        for base in BASE_STRATEGIES:
            s = pick(base)
            if s in by_strategy.index:
                r = by_strategy.loc[s]
                out.append({"Strategy": strategy_label(base), "strategy": s, "value": r["value"],
                            "err_plus": r["ci_high"] - r["value"], "err_minus": r["value"] - r["ci_low"],
                            "ci_low": r["ci_low"], "ci_high": r["ci_high"]})
        if out:
            series[name] = pd.DataFrame(out)
    return series


def relevance_by_position(store: Store, run: RunRecord, k: int) -> pd.DataFrame:
    frame = pd.DataFrame(store.relevance_by_position(run.run_id, k),
                         columns=["strategy", "rank", "mean_grade", "n"])
    frame["order"] = frame["strategy"].map({s: i for i, s in enumerate(STRATEGIES)}).fillna(99)
    frame = frame.sort_values(["order", "strategy", "rank"]).drop(columns="order").reset_index(drop=True)
    frame["label"] = frame["strategy"].map(strategy_label)
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
    frame["best_strategy"] = frame["best_strategy"].map(strategy_label)
    frame["worst_strategy"] = frame["worst_strategy"].map(strategy_label)
    return frame


def reranker_tests(store: Store, run: RunRecord, metric: str, k: int) -> pd.DataFrame:
    """Baseline vs reranker per retrieval strategy, with a paired test over the same queries."""
    from engine.statistics import paired_test

    values = per_query_values(store, run, metric, k)
    wide = values.pivot(index="query_id", columns="strategy", values="value")
    out = []
    for base in BASE_STRATEGIES:
        reranked = RERANKED_OF[base]
        if base not in wide or reranked not in wide:
            continue
        pair = wide[[reranked, base]].dropna()
        if pair.empty:
            continue
        test = paired_test(pair[reranked].to_numpy(), pair[base].to_numpy(),
                           n_resamples=PAIRED_RESAMPLES, seed=0)
        diff = pair[reranked] - pair[base]
        out.append({
            "Strategy": strategy_label(base), "strategy": base,
            WITHOUT: float(pair[base].mean()), WITH: float(pair[reranked].mean()),
            "Change": test.diff, "CI low": test.ci_low, "CI high": test.ci_high,
            "p-value": test.p_value, "Verdict": verdict(test.p_value),
            "Queries improved": int((diff > 1e-12).sum()), "Queries hurt": int((diff < -1e-12).sum()),
            "Unchanged": int((diff.abs() <= 1e-12).sum()),
        })
    return pd.DataFrame(out, columns=["Strategy", "strategy", WITHOUT, WITH, "Change", "CI low",
                                      "CI high", "p-value", "Verdict", "Queries improved",
                                      "Queries hurt", "Unchanged"])


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def verdict(p_value: float) -> str:
    return "significant" if p_value < ALPHA else "not distinguishable"


def _p(p_value: float) -> str:
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.3f}"


def relevance_distribution(table: pd.DataFrame, run: RunRecord) -> pd.DataFrame:
    """Per strategy: share of top-k results highly relevant (3), relevant (>= threshold), not relevant."""
    wide = table.pivot(index="strategy", columns="metric", values="value")
    columns = {"pct_relevant": f"% relevant (grade ≥ {run.threshold})",
               "pct_not_relevant": f"% not relevant (grade < {run.threshold})",
               "judged": "% judged"}
    if run.grade_max is None or run.grade_max >= 3:
        columns = {"pct_highly_relevant": "% highly relevant (grade 3)", **columns}
    out = pd.DataFrame({"Strategy": [strategy_label(s) for s in _ordered(wide.index.tolist())]})
    ordered = _ordered(wide.index.tolist())
    for metric, title in columns.items():
        if metric in wide:
            out[title] = [100.0 * wide.loc[s, metric] for s in ordered]
    return out


def failed_counts(store: Store, run: RunRecord) -> pd.DataFrame:
    frame = pd.DataFrame(store.failed_top1_counts(run.run_id),
                         columns=["strategy", "failed", "unjudged", "n"])
    frame["order"] = frame["strategy"].map({s: i for i, s in enumerate(STRATEGIES)}).fillna(99)
    frame = frame.sort_values("order").drop(columns="order").reset_index(drop=True)
    frame.insert(0, "Strategy", frame["strategy"].map(strategy_label))
    return frame


def failed_queries(store: Store, run_id: str, strategy: str) -> pd.DataFrame:
    """Queries whose top-1 result from `strategy` is graded 0 (or unjudged, counted as 0).

    One row per query: its id, text and type, then each strategy's top-1 result as
    "[grade] title (doc id)", so a reader sees what came back instead.
    """
    rows = store.failed_top1(run_id, strategy)
    if not rows:
        labels = [strategy_label(s) for s in _ordered(store.result_strategies(run_id))]
        return pd.DataFrame(columns=["Query id", "Query", "Type", *labels])
    frame = pd.DataFrame(rows)
    frame["cell"] = [_result_cell(r.grade, r.title, r.doc_id) for r in frame.itertuples()]
    wide = frame.pivot(index=["query_id", "text", "query_type"], columns="strategy", values="cell")
    # The strategy whose top 1 failed comes first: it is what the table is about.
    others = [s for s in _ordered(wide.columns.tolist()) if s != strategy]
    wide = wide[[strategy, *others]]
    wide.columns = [strategy_label(s) for s in wide.columns]
    wide = wide.reset_index().rename(columns={"query_id": "Query id", "text": "Query",
                                              "query_type": "Type"})
    return wide.fillna("(no results)")


def _result_cell(grade: Any, title: Any, doc_id: str) -> str:
    shown = "unjudged" if grade is None or (isinstance(grade, float) and math.isnan(grade)) else int(grade)
    title = title if isinstance(title, str) and title else doc_id
    return f"[{shown}] {title[:80]} ({doc_id})"


def latency(store: Store, run: RunRecord) -> pd.DataFrame:
    frame = pd.DataFrame(store.latency_summary(run.run_id), columns=["strategy", "p50_ms", "p95_ms", "n"])
    frame.insert(0, "Strategy", frame["strategy"].map(strategy_label))
    return frame


def significance(store: Store, run: RunRecord, metric: str, k: int,
                 rows: pd.DataFrame | None = None) -> list[Sentence]:
    """The best strategy against every other one, each said in words with its paired test."""
    from engine.statistics import paired_test

    rows = rows if rows is not None else _metric_rows(summary(store, run, k), metric)
    if len(rows) < 2:
        return [Sentence("Only one strategy was evaluated: nothing to compare.")]
    values = per_query_values(store, run, metric, k)
    wide = values.pivot(index="query_id", columns="strategy", values="value")
    best = rows.loc[rows["value"].idxmax(), "strategy"]
    name = metric_label(metric, k)
    out = []
    for other in rows["strategy"]:
        if other == best or other not in wide:
            continue
        pair = wide[[best, other]].dropna()
        test = paired_test(pair[best].to_numpy(), pair[other].to_numpy(),
                           n_resamples=PAIRED_RESAMPLES, seed=0)
        gap = f"{test.diff:+.3f} {name} (95% CI {test.ci_low:+.3f} to {test.ci_high:+.3f}, {_p(test.p_value)}, {test.n} queries)"
        if test.p_value < ALPHA:
            out.append(Sentence(f"{strategy_label(best)} beats {strategy_label(other)} by {gap}: "
                                "a real difference.", "good", other))
        else:
            out.append(Sentence(f"{strategy_label(best)} and {strategy_label(other)} are not "
                                f"distinguishable: {gap}; the gap could be noise.", "info", other))
    return out


def recommendations(store: Store, run: RunRecord, view: ResultsView) -> list[Sentence]:
    """What to do next, drawn from patterns in the results."""
    out: list[Sentence] = []
    k = view.k
    rows = view.metric_summary
    name = metric_label(view.metric, k)
    if view.headline is not None and not rows.empty:
        best = rows.loc[rows["value"].idxmax()]
        ties = [s.subject for s in view.significance if s.subject and s.kind == "info"]
        text = (f"Use {best['label']}: the highest {name} ({best['value']:.3f}, 95% CI "
                f"{best['ci_low']:.3f} to {best['ci_high']:.3f}).")
        if ties:
            text += (f" {len(ties)} other strateg{'y is' if len(ties) == 1 else 'ies are'} not "
                     f"distinguishable from it ({', '.join(strategy_label(s) for s in ties)}): "
                     "prefer the cheapest of those if latency matters.")
        out.append(Sentence(text, "good"))
    out.extend(_query_type_findings(store, run, view.metric, k))
    for r in view.reranker_table.to_dict("records"):
        change, p = r["Change"], r["p-value"]
        if p < ALPHA:
            word = "adds" if change > 0 else "costs"
            out.append(Sentence(
                f"On {r['Strategy']}, the reranker {word} {change:+.3f} {name} ({_p(p)}, significant; "
                f"{r['Queries improved']} queries improved, {r['Queries hurt']} hurt).",
                "good" if change > 0 else "warn", RERANKED_OF[r["strategy"]]))
        else:
            out.append(Sentence(
                f"On {r['Strategy']}, the reranker changes {name} by {change:+.3f}, not "
                f"distinguishable from no reranker ({_p(p)}): it is not worth its latency here.",
                "info", RERANKED_OF[r["strategy"]]))
    missing = store.unretrieved_relevant(run.run_id, run.threshold)
    if missing["never_retrieved"]:
        share = missing["never_retrieved"] / missing["relevant"]
        out.append(Sentence(
            f"{missing['never_retrieved']} of {missing['relevant']} relevant documents ({share:.0%}), "
            f"over {_plural(missing['queries_affected'], 'query', 'queries')}, are never retrieved by any strategy in its "
            f"top {run.depth}: a reranker cannot fix that; look at chunking, the embedding model or "
            "the wording of those documents.", "warn"))
    judged = view.distribution
    judged_col = "% judged"
    if run.label_source == "human" and judged_col in judged and not judged.empty:
        low = judged[judged_col].max()
        if low < 50:
            out.append(Sentence(
                f"At most {low:.0f}% of the top-{k} results are judged: unjudged results count as "
                "not relevant, so absolute values are lower bounds; compare strategies with each "
                "other rather than reading the numbers on their own.", "info"))
    for message in skipped_messages(run.skipped):
        out.append(Sentence(message, "warn"))
    return out


def _query_type_findings(store: Store, run: RunRecord, metric: str, k: int) -> list[Sentence]:
    rows = [r for r in store.metric_by_query_type(run.run_id, metric, k) if r["strategy"] in BASE_STRATEGIES]
    types = sorted({r["query_type"] for r in rows})
    if len(types) < 2:
        return []
    out = []
    name = metric_label(metric, k)
    for query_type in types:
        values = {r["strategy"]: r["value"] for r in rows if r["query_type"] == query_type}
        if len(values) < 2:
            continue
        best = max(values, key=values.get)
        worst = min(values, key=values.get)
        if values[best] <= 0 or values[worst] >= 0.8 * values[best]:
            continue
        text = (f"{query_type.capitalize()} queries do poorly on {strategy_label(worst)} ({name} "
                f"{values[worst]:.2f} against {values[best]:.2f} on {strategy_label(best)})")
        hybrid = values.get("hybrid")
        if hybrid is not None and best != "hybrid" and hybrid >= 0.9 * values[best]:
            text += f": use hybrid, which keeps {hybrid:.2f} on them and does well on the other types."
        else:
            text += f": use {strategy_label(best)} for them, or hybrid to cover every type."
        out.append(Sentence(text, "warn"))
    return out


# -- query drill-down --------------------------------------------------------------------------


@dataclass
class QueryDetail:
    query_id: str
    text: str
    query_type: str
    source: dict[str, str] | None
    #: strategy -> rank, doc_id, title, grade, reason, score
    results: dict[str, pd.DataFrame]
    #: the query's known relevant documents and which strategies found them (rank)
    relevant: pd.DataFrame
    documents: dict[str, dict[str, str]]


def query_choices(store: Store, run_id: str) -> pd.DataFrame:
    """The run's queries: query_id, text, query_type."""
    return pd.DataFrame(store.queries(run_id), columns=["query_id", "text", "query_type", "source_doc_id"])


def query_detail(store: Store, run_id: str, query_id: str) -> QueryDetail:
    run = store.get_run(run_id)
    queries = {q["query_id"]: q for q in store.queries(run.run_id)}
    if query_id not in queries:
        raise SearchGradeError(f"query {query_id!r} is not in run {run.run_id}; pick one from the list")
    query = queries[query_id]
    results = store.results_with_grades(run.run_id, query_id=query_id)
    grades = store.grades(run.run_id, query_id)
    relevant = [g for g in grades if g["grade"] is not None and g["grade"] >= run.threshold]
    doc_ids = {r["doc_id"] for r in results} | {g["doc_id"] for g in relevant}
    if query["source_doc_id"]:
        doc_ids.add(query["source_doc_id"])
    docs = store.documents(run.run_id, sorted(doc_ids))
    by_strategy: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_strategy.setdefault(r["strategy"], []).append({
            "Rank": r["rank"], "Doc id": r["doc_id"], "Title": docs.get(r["doc_id"], {}).get("title", ""),
            "Grade": r["grade"], "Judge's reason": r["reason"] or ("" if r["grade"] is not None
                                                                     else "unjudged (counts as 0)"),
            "Score": r["score"],
        })
    found = {(r["doc_id"], r["strategy"]): r["rank"] for r in results}
    strategies = _ordered(list(by_strategy))
    relevant_rows = [
        {"Doc id": g["doc_id"], "Title": docs.get(g["doc_id"], {}).get("title", ""), "Grade": g["grade"],
         **{strategy_label(s): found.get((g["doc_id"], s)) for s in strategies}}
        for g in sorted(relevant, key=lambda g: (-g["grade"], g["doc_id"]))
    ]
    return QueryDetail(
        query_id=query_id, text=query["text"], query_type=query["query_type"],
        source=docs.get(query["source_doc_id"]) if query["source_doc_id"] else None,
        results={s: pd.DataFrame(by_strategy[s]).astype({"Grade": "Int64"}) for s in strategies},
        relevant=pd.DataFrame(relevant_rows).astype(
            {strategy_label(s): "Int64" for s in strategies} if relevant_rows else {}),
        documents=docs,
    )


# -- trends and comparisons --------------------------------------------------------------------


def trend(store: Store, metric: str, k: int, collection_name: str | None = None) -> pd.DataFrame:
    """One metric across complete runs, oldest first: run_id, name, created_at, strategy, label, value, CI."""
    frame = pd.DataFrame(store.trend(metric, k, collection_name),
                         columns=["run_id", "name", "created_at", "collection_name", "strategy",
                                  "value", "ci_low", "ci_high", "n"])
    frame["label"] = frame["strategy"].map(strategy_label)
    return frame


def trend_cutoffs(store: Store) -> list[int]:
    """Cut-offs stored by at least one complete run."""
    return sorted({k for run in store.list_runs() if run.status == "complete"
                   for k in stored_cutoffs(store, run.run_id)})


@dataclass
class RunComparison:
    run_a: RunRecord
    run_b: RunRecord
    metric: str
    k: int
    n_shared: int
    #: Strategy, Run A, Run B, Change, CI low, CI high, p-value, Verdict, Queries
    deltas: pd.DataFrame
    #: strategy label, query id, text, Run A, Run B, Change (largest |change| first)
    changed: pd.DataFrame
    notes: list[str]


def compare_runs(store: Store, run_a: str, run_b: str, metric: str = PRIMARY_METRIC,
                 k: int = PRIMARY_K, n_changed: int = 20) -> RunComparison:
    """Run B against run A per strategy, paired over the queries (by id) both evaluated."""
    from engine.statistics import paired_test

    a, b = store.get_run(run_a), store.get_run(run_b)
    notes = []
    for run in (a, b):
        if k > run.depth:
            raise SearchGradeError(f"k of {k} is above the depth of run {run.run_id} ({run.depth}); "
                                   "pick a k both runs kept")
    if a.collection_name != b.collection_name:
        notes.append(f"The runs evaluate different collections ({a.collection_name}, "
                     f"{b.collection_name}): only queries with the same id are paired.")
    rows = store.paired_metric_values(a.run_id, b.run_id, metric, k)
    frame = pd.DataFrame(rows, columns=["strategy", "query_id", "text", "value_a", "value_b"])
    if frame.empty:
        values_a = per_query_values(store, a, metric, k)
        values_b = per_query_values(store, b, metric, k)
        texts = query_choices(store, a.run_id)[["query_id", "text"]]
        frame = values_a.merge(values_b, on=["strategy", "query_id"], suffixes=("_a", "_b")).merge(
            texts, on="query_id")
    deltas = []
    for strategy in _ordered(frame["strategy"].unique().tolist()):
        pair = frame[frame["strategy"] == strategy]
        test = paired_test(pair["value_b"].to_numpy(), pair["value_a"].to_numpy(),
                           n_resamples=PAIRED_RESAMPLES, seed=0)
        deltas.append({"Strategy": strategy_label(strategy), "strategy": strategy,
                       "Run A": float(pair["value_a"].mean()), "Run B": float(pair["value_b"].mean()),
                       "Change": test.diff, "CI low": test.ci_low, "CI high": test.ci_high,
                       "p-value": test.p_value, "Verdict": verdict(test.p_value), "Queries": test.n})
    frame["Change"] = frame["value_b"] - frame["value_a"]
    changed = frame.reindex(frame["Change"].abs().sort_values(ascending=False, kind="stable").index)
    changed = changed[changed["Change"].abs() > 1e-12].head(n_changed)
    changed = pd.DataFrame({
        "Strategy": changed["strategy"].map(strategy_label), "Query id": changed["query_id"],
        "Query": changed["text"], "Run A": changed["value_a"], "Run B": changed["value_b"],
        "Change": changed["Change"],
    })
    n_shared = int(frame["query_id"].nunique())
    only = {len(store.queries(a.run_id)), len(store.queries(b.run_id))}
    if only != {n_shared}:
        notes.append(f"{n_shared} queries are in both runs; the others are left out of the paired tests.")
    return RunComparison(a, b, metric, k, n_shared, pd.DataFrame(deltas), changed, notes)


# -- downloads ---------------------------------------------------------------------------------


def per_query_csv(store: Store, run_id: str) -> bytes:
    """The run's per-query metrics as CSV (engine.export's format)."""
    from engine.export import export_run

    with tempfile.TemporaryDirectory() as tmp:
        [path] = export_run(store, run_id, "csv", tmp)
        return path.read_bytes()


def trec_zip(store: Store, run_id: str) -> bytes:
    """The run's TREC run files, one per strategy, zipped."""
    from engine.export import export_run

    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in export_run(store, run_id, "trec", tmp):
            zf.write(path, arcname=path.name)
    return buffer.getvalue()


# -- the evaluate page -------------------------------------------------------------------------


@dataclass(frozen=True)
class CollectionOverview:
    name: str
    path: str
    documents: int
    queries: int
    judged_queries: int
    has_qrels: bool
    grade_min: int | None
    grade_max: int | None
    threshold: int | None
    notes: tuple[str, ...]
    has_precomputed_embeddings: bool


def collection_overview(path: str | Path) -> CollectionOverview:
    """What the evaluate page needs to pre-fill its defaults: sizes, judgments, grade scale."""
    from engine.collections import default_threshold, grade_scale, load_collection

    collection = load_collection(path)
    qrels = collection.qrels or {}
    scale = grade_scale(qrels) if qrels else (None, None)
    return CollectionOverview(
        name=collection.name, path=collection.path, documents=len(collection.documents),
        queries=len(collection.queries),
        judged_queries=sum(1 for q in collection.queries if qrels.get(q.query_id)),
        has_qrels=collection.has_qrels, grade_min=scale[0], grade_max=scale[1],
        threshold=default_threshold(scale[1]) if scale[1] is not None else None,
        notes=tuple(collection.notes),
        has_precomputed_embeddings=Path(collection.path, "embeddings").is_dir(),
    )


@dataclass(frozen=True)
class ModeStatus:
    mode: str
    label: str
    available: bool
    reason: str


def mode_status(overview: CollectionOverview | None, environ: dict[str, str] | None = None) -> list[ModeStatus]:
    """Which grading modes can run on this collection, and why not when they cannot."""
    import os

    from engine.pipeline import RunConfig

    env = os.environ if environ is None else environ
    if overview is None:
        human = ModeStatus("qrels", "Human judgments (qrels)", False, "pick a collection first")
    elif overview.has_qrels:
        human = ModeStatus("qrels", "Human judgments (qrels)", True,
                           f"{overview.judged_queries} queries with judgments")
    else:
        human = ModeStatus("qrels", "Human judgments (qrels)", False,
                           "this collection has no qrels.tsv (query-id, corpus-id, score)")
    try:
        RunConfig(mode="llm").validate()
        llm_ready, why = True, ""
    except SearchGradeError as exc:
        llm_ready, why = False, f"the LLM judge is not in this build yet ({exc})"
    endpoint = env.get("SEARCHGRADE_LLM_BASE_URL") or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY")
    if llm_ready and not endpoint:
        llm_ready, why = False, ("no LLM endpoint is configured: set OPENAI_BASE_URL (a local "
                                 "OpenAI-compatible server) or OPENAI_API_KEY, then restart the app")
    llm = ModeStatus("llm", "LLM judge", llm_ready, why or "endpoint configured")
    return [human, llm]


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
UPLOAD_SUFFIXES = (".jsonl", ".csv", ".parquet", ".zip")


def save_upload(filename: str, data: bytes, data_dir: str | Path) -> Path:
    """Save an uploaded collection under data_dir/uploads and return the path to load.

    A .zip is unpacked (members stay inside the target folder) and the folder holding
    corpus.jsonl is returned; other files are saved as they are.
    """
    name = _SAFE_NAME.sub("_", Path(filename).name).strip("._") or "upload"
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise SearchGradeError(f"{filename}: unsupported upload type {suffix or '(none)'}; upload a "
                               ".jsonl, .csv or .parquet file, or a .zip of a BEIR folder")
    uploads = Path(data_dir) / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    if suffix != ".zip":
        target = uploads / name
        target.write_bytes(data)
        return target
    folder = uploads / Path(name).stem
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for member in zf.infolist():
                target = (folder / member.filename).resolve()
                if not target.is_relative_to(folder.resolve()):
                    raise SearchGradeError(f"{filename}: member {member.filename!r} points outside "
                                           "the archive's folder; re-create the zip from the BEIR folder")
                if member.is_dir():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    except zipfile.BadZipFile:
        raise SearchGradeError(f"{filename}: not a readable zip file; re-create it") from None
    corpora = sorted(folder.rglob("corpus.jsonl"), key=lambda p: len(p.parts))
    corpora = [p for p in corpora if "__MACOSX" not in p.parts]
    if not corpora:
        raise SearchGradeError(f"{filename}: no corpus.jsonl inside; zip a BEIR folder (corpus.jsonl, "
                               "queries.jsonl, qrels.tsv)")
    return corpora[0].parent
