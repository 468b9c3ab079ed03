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
    "source_found": "Source found",
}
#: Metric of LLM runs (generated queries): is the query's source document in the top k.
SOURCE_FOUND = "source_found"
RERANKED_OF = {base: f"{base}_rerank" for base in BASE_STRATEGIES}
BASE_OF = {reranked: base for base, reranked in RERANKED_OF.items()}
WITHOUT, WITH = "Without reranker", "With reranker"


def metric_label(metric: str, k: int) -> str:
    """ "DCG@10", "Mean relevance@5"."""
    return f"{METRIC_LABELS.get(metric, metric)}@{k}"


def strategy_label(strategy: str) -> str:
    return STRATEGY_LABELS.get(strategy, strategy)


def metric_names(run: RunRecord | None = None) -> list[str]:
    """The metrics a run can show: every registered one, plus source found for generated queries."""
    from engine.metrics import METRIC_NAMES

    names = list(METRIC_NAMES)
    if run is None or run.mode == "llm":
        names.append(SOURCE_FOUND)
    return names


def is_llm_run(run: RunRecord) -> bool:
    """The run used the LLM: its mode, or qrels with the judge (agreement, unjudged results)."""
    return run.mode == "llm" or bool(run.config.get("llm"))


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
    if metric == SOURCE_FOUND:
        return pd.DataFrame(store.source_found_values(run.run_id, k),
                            columns=["strategy", "query_id", "value"])
    return recompute_values(store, run, [metric], k)[["strategy", "query_id", metric]].rename(
        columns={metric: "value"})


def recompute_values(store: Store, run: RunRecord, metrics: Sequence[str], k: int) -> pd.DataFrame:
    """Metrics at cut-off k recomputed from the stored results and grades: one row per strategy and query.

    The pipeline's own per-query function does it, so a failed judgment (grade NULL) counts as
    the stored metrics count it: 0 in the rank metrics, left out of mean relevance and the
    relevance distribution (NaN where every top-k result failed). A query a strategy returned
    nothing for gets the metrics of an empty ranking.
    """
    from engine.pipeline import per_query_metrics
    from engine.types import ScoredDoc, SearchHits

    _check_k(run, k)
    judgments: dict[str, dict[str, int]] = {}
    failed: dict[str, set[str]] = {}
    for g in store.grades(run.run_id):
        if g["grade"] is None:
            failed.setdefault(g["query_id"], set()).add(g["doc_id"])
        else:
            judgments.setdefault(g["query_id"], {})[g["doc_id"]] = g["grade"]
    ranked = {(r["strategy"], r["query_id"]): r["doc_ids"] for r in store.ranked_doc_ids(run.run_id, k)}
    query_ids = [q["query_id"] for q in store.queries(run.run_id)]
    hits = {
        strategy: [SearchHits([ScoredDoc(d, 0.0, rank) for rank, d in enumerate(ranked.get((strategy, q), []), 1)],
                              0.0) for q in query_ids]
        for strategy in _ordered(store.result_strategies(run.run_id))
    }
    wanted = set(metrics)
    values: dict[tuple[str, str], dict[str, float]] = {}
    for strategy, qid, metric, _k, value in per_query_metrics(hits, query_ids, judgments, run.threshold,
                                                               [k], failed=failed):
        if metric in wanted:
            values.setdefault((strategy, qid), {})[metric] = value
    rows = [{"strategy": strategy, "query_id": qid, **values.get((strategy, qid), {})}
            for strategy in hits for qid in query_ids]
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
    found = pd.DataFrame(store.source_found_values(run.run_id, k), columns=["strategy", "query_id", "value"])
    if not found.empty:
        values = values.merge(found.rename(columns={"value": SOURCE_FOUND}), how="left",
                              on=["strategy", "query_id"])
    out = []
    for strategy, group in values.groupby("strategy", sort=False):
        for metric in [m for m in values.columns if m not in ("strategy", "query_id")]:
            # Left out where a query has no value (every judgment failed; no source document).
            column = group[metric].dropna().to_numpy(dtype=float)
            if len(column) == 0:
                continue
            ci = bootstrap_ci(column, n_resamples=RECOMPUTE_RESAMPLES, seed=0)
            out.append((strategy, metric, ci.mean, ci.low, ci.high, len(column)))
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
    #: The LLM's part of the run (judge, calls, failures, source found, agreement); None without LLM.
    llm: LLMPanel | None = None


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
        llm=llm_panel(store, run, table) if is_llm_run(run) else None,
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
    """Mean grade at each rank per strategy: unjudged as 0, failed judgments left out (as in the
    stored mean relevance); columns strategy, rank, mean_grade, n, judge_failed, label."""
    frame = pd.DataFrame(store.position_means(run.run_id, k),
                         columns=["strategy", "rank", "mean_grade", "n", "judge_failed"])
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
                         columns=["strategy", "failed", "unjudged", "judge_failed", "n"])
    frame["order"] = frame["strategy"].map({s: i for i, s in enumerate(STRATEGIES)}).fillna(99)
    frame = frame.sort_values("order").drop(columns="order").reset_index(drop=True)
    frame.insert(0, "Strategy", frame["strategy"].map(strategy_label))
    return frame


def failed_queries(store: Store, run_id: str, strategy: str) -> pd.DataFrame:
    """Queries whose top-1 result from `strategy` is graded 0 (or unjudged, counted as 0).

    One row per query: its id, text and type, then each strategy's top-1 result as
    "[grade] title (doc id)", so a reader sees what came back instead. A top 1 whose judgment
    failed shows "[judge failed]", never a grade, and does not make its query a failed one.
    """
    rows = store.failed_top1(run_id, strategy)
    if not rows:
        labels = [strategy_label(s) for s in _ordered(store.result_strategies(run_id))]
        return pd.DataFrame(columns=["Query id", "Query", "Type", *labels])
    frame = pd.DataFrame(rows)
    frame["cell"] = [_result_cell(r.grade, r.title, r.doc_id, bool(r.judge_failed))
                     for r in frame.itertuples()]
    wide = frame.pivot(index=["query_id", "text", "query_type"], columns="strategy", values="cell")
    # The strategy whose top 1 failed comes first: it is what the table is about.
    others = [s for s in _ordered(wide.columns.tolist()) if s != strategy]
    wide = wide[[strategy, *others]]
    wide.columns = [strategy_label(s) for s in wide.columns]
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
    out.extend(_llm_findings(view))
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


# -- the LLM's part of a run -------------------------------------------------------------------

STAGE_LABELS = {"querygen": "Query generation", "judge": "Judge"}
USAGE_COLUMNS = {"requests": "Calls", "ok": "Valid replies", "failures": "Failed",
                 "invalid_replies": "Invalid replies", "retries": "Retries", "cache_hits": "Cache hits",
                 "prompt_tokens": "Prompt tokens", "completion_tokens": "Completion tokens",
                 "latency_s": "Time in calls (s)"}


@dataclass
class AgreementView:
    """Judge vs human labels on the pairs both graded (runs.stats["agreement"])."""

    n: int
    exact: float | None
    #: Measure, Value, Reading (Landis & Koch), What it compares.
    kappas: pd.DataFrame
    #: Rows "Judge g", columns "Human g": pairs per (judge grade, human grade).
    confusion: pd.DataFrame


@dataclass
class LLMPanel:
    judge_model: str | None
    judge_prompt: str | None
    querygen_model: str | None
    querygen_prompt: str | None
    output_mode: str | None
    #: The run whose queries this run reused (queries_from).
    queries_from: str | None
    #: One row per LLM stage: Stage, Calls, Valid replies, Failed, ..., Prompt/Completion tokens.
    usage: pd.DataFrame
    #: Pairs the judge graded (or tried to) in this run.
    pairs: int | None
    judge_failures: int
    failure_reasons: dict[str, int]
    #: Query id, Query, Type, Doc id, Title, Reason: the failed pairs stored with the run.
    failures: pd.DataFrame
    #: Whether the failures are in the metrics (False: qrels runs judging only for agreement).
    failures_in_metrics: bool
    #: Strategy, strategy, value, ci_low, ci_high, n: source found@k (generated queries only).
    source_found: pd.DataFrame
    #: Queries per type (natural, keyword, ...).
    query_types: dict[str, int]
    agreement: AgreementView | None


def usage_table(usage: dict[str, dict[str, float]]) -> pd.DataFrame:
    """A run's (or a job's) LLM accounting, one row per stage, query generation first."""
    order = [s for s in STAGE_LABELS if s in usage] + sorted(s for s in usage if s not in STAGE_LABELS)
    rows = [{"Stage": STAGE_LABELS.get(stage, stage),
             **{title: usage[stage].get(name, 0) for name, title in USAGE_COLUMNS.items()}}
            for stage in order]
    frame = pd.DataFrame(rows, columns=["Stage", *USAGE_COLUMNS.values()])
    ints = [t for n, t in USAGE_COLUMNS.items() if n != "latency_s"]
    return frame.astype({c: "int64" for c in ints})


def usage_text(counters: dict[str, float]) -> str:
    """One stage's accounting in a few words: "12 calls · 3,456 tokens · 5 cached · 1 failed"."""
    tokens = int(counters.get("prompt_tokens", 0) + counters.get("completion_tokens", 0))
    parts = [_plural(int(counters.get("requests", 0)), "call", "calls"), f"{tokens:,} tokens"]
    if counters.get("cache_hits"):
        parts.append(f"{int(counters['cache_hits']):,} cached")
    if counters.get("retries"):
        parts.append(f"{int(counters['retries']):,} retried")
    if counters.get("failures"):
        parts.append(f"{int(counters['failures']):,} failed")
    return " · ".join(parts)


def kappa_reading(kappa: float | None) -> str:
    """Landis & Koch's words for a kappa."""
    if kappa is None or (isinstance(kappa, float) and math.isnan(kappa)):
        return "undefined (one label throughout)"
    for bound, word in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"),
                        (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"


def agreement_view(stats: dict[str, Any], human_threshold: int) -> AgreementView | None:
    if not stats or not stats.get("n"):
        return None
    rows = [
        ("Cohen's kappa", stats.get("kappa"), "grades as categories"),
        ("Weighted kappa (linear)", stats.get("kappa_linear"),
         "grades as an ordinal scale: 2 vs 3 is a smaller disagreement than 0 vs 3"),
        ("Weighted kappa (quadratic)", stats.get("kappa_quadratic"), "as linear, squared distances"),
        ("Kappa, relevant or not", stats.get("kappa_binary"),
         f"judge grade ≥ 2 vs human grade ≥ {human_threshold}"),
    ]
    kappas = pd.DataFrame([{"Measure": m, "Value": v, "Reading": kappa_reading(v), "Compares": what}
                           for m, v, what in rows])
    labels = stats.get("labels", [])
    confusion = pd.DataFrame(stats.get("confusion", []), index=[f"Judge {g}" for g in labels],
                             columns=[f"Human {g}" for g in labels])
    return AgreementView(int(stats["n"]), stats.get("exact"), kappas, confusion)


def llm_panel(store: Store, run: RunRecord, table: pd.DataFrame) -> LLMPanel:
    """The LLM's part of a run at the cut-off of `table` (the run's summary at k)."""
    stats = run.stats or {}
    judge = stats.get("llm", {})
    querygen = stats.get("querygen", {})
    failures = pd.DataFrame(store.judge_failures(run.run_id),
                            columns=["query_id", "text", "query_type", "doc_id", "title", "model", "reason"])
    failures = failures.drop(columns="model").rename(columns={
        "query_id": "Query id", "text": "Query", "query_type": "Type", "doc_id": "Doc id",
        "title": "Title", "reason": "Reason"})
    in_metrics = run.mode == "llm" or bool(run.config.get("judge_unjudged"))
    count = len(failures) if (in_metrics and run.status == "complete") else int(judge.get("judge_failures", 0))
    found = _metric_rows(table, SOURCE_FOUND) if not table.empty else pd.DataFrame()
    types: dict[str, int] = {}
    for q in store.queries(run.run_id):
        types[q["query_type"]] = types.get(q["query_type"], 0) + 1
    llm_config = run.config.get("llm") or {}
    return LLMPanel(
        judge_model=judge.get("model") or llm_config.get("model"),
        judge_prompt=judge.get("prompt_version"),
        querygen_model=querygen.get("model"),
        querygen_prompt=querygen.get("prompt_version"),
        output_mode=judge.get("output_mode"),
        queries_from=stats.get("queries_from") or run.config.get("queries_from"),
        usage=usage_table(store.llm_usage(run.run_id)),
        pairs=judge.get("pairs"),
        judge_failures=count,
        failure_reasons=dict(judge.get("failure_reasons", {})),
        failures=failures,
        failures_in_metrics=in_metrics,
        source_found=found,
        query_types=types,
        agreement=agreement_view(stats.get("agreement", {}), run.threshold),
    )


def _llm_findings(view: ResultsView) -> list[Sentence]:
    """Judge failures, source found and judge-vs-human agreement, said in words."""
    panel = view.llm
    if panel is None:
        return []
    out = []
    if panel.judge_failures:
        share = panel.judge_failures / panel.pairs if panel.pairs else None
        text = f"{_plural(panel.judge_failures, 'judgment', 'judgments')} failed"
        if share is not None:
            text += f" ({share:.0%} of {panel.pairs:,} pairs)"
        if panel.failures_in_metrics:
            text += (": they count as 0 in DCG and the other rank metrics and are left out of mean "
                     "relevance (judged@k shows how many results hold a grade). Failures are not "
                     "cached: resuming or re-running the evaluation asks the judge again for them only.")
        else:
            text += ": they are left out of the judge-vs-human agreement; the metrics use human labels."
        out.append(Sentence(text, "warn" if share is None or share >= 0.05 else "info"))
    found = panel.source_found
    if not found.empty:
        best = found.loc[found["value"].idxmax()]
        worst = found.loc[found["value"].idxmin()]
        text = (f"The query's source document is in the top {view.k} for {best['value']:.0%} of "
                f"queries on {best['label']}")
        if worst["strategy"] != best["strategy"]:
            text += f", {worst['value']:.0%} on {worst['label']}"
        out.append(Sentence(text + f" (source found@{view.k}).",
                            "warn" if best["value"] < 0.5 else "info"))
    agreement = panel.agreement
    if agreement is not None:
        # Binary human labels: only relevant-or-not compares like with like.
        binary = view.run.grade_max is not None and view.run.grade_max <= 1
        measure = "Kappa, relevant or not" if binary else "Weighted kappa (linear)"
        value = agreement.kappas.set_index("Measure").loc[measure, "Value"]
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            label = "relevant-or-not kappa" if binary else "linear weighted kappa"
            text = (f"The judge's agreement with the human labels is {kappa_reading(value)} "
                    f"({label} {value:.2f} over {agreement.n:,} pairs both graded)")
            if value < 0.4:
                out.append(Sentence(text + ": read LLM-judged results of this collection with care, "
                                    "or check the judge model and prompt.", "warn"))
            else:
                out.append(Sentence(text + ".", "good" if value > 0.6 else "info"))
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
    #: strategy -> rank of the source document in its results (None: not retrieved)
    source_ranks: dict[str, int | None] = field(default_factory=dict)


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
        if r["source"] is None:
            judgment, reason = "none", "unjudged (counts as 0)"
        elif r["grade"] is None:
            # A failed judgment is no grade: it says so, with the judge's failure.
            judgment, reason = "judge failed", r["reason"] or "judge failure"
        else:
            judgment = "human" if r["source"] == "human" else "LLM"
            reason = r["reason"] or ""
        by_strategy.setdefault(r["strategy"], []).append({
            "Rank": r["rank"], "Doc id": r["doc_id"], "Title": docs.get(r["doc_id"], {}).get("title", ""),
            "Grade": r["grade"], "Judgment": judgment, "Judge's reason": reason, "Score": r["score"],
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
        source_ranks={s: found.get((query["source_doc_id"], s)) for s in strategies}
        if query["source_doc_id"] else {},
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


#: Grading modes the evaluate page offers, in order.
MODE_LABELS = {
    "qrels": "Human judgments (qrels)",
    "llm": "LLM judge",
    "qrels_llm": "Human judgments + LLM agreement",
}
ENV_BASE_URL, ENV_API_KEY = "OPENAI_BASE_URL", "OPENAI_API_KEY"


def llm_defaults(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The LLM form's pre-filled values: model and base URL from the server's environment."""
    import os

    from engine.pipeline import ENV_MODEL

    env = os.environ if environ is None else environ
    return {"model": env.get(ENV_MODEL, ""), "base_url": env.get(ENV_BASE_URL, "")}


def llm_endpoint(model: str | None, base_url: str | None,
                 environ: dict[str, str] | None = None) -> tuple[bool, str]:
    """Whether the LLM can run: a model name, and an endpoint (a base URL typed or in
    $OPENAI_BASE_URL, or $OPENAI_API_KEY for the hosted API). None means: from the environment.

    Returns (ready, why): why is the reason it cannot, or what it will use.
    """
    import os

    env = os.environ if environ is None else environ
    defaults = llm_defaults(env)
    model = (defaults["model"] if model is None else model).strip()
    base_url = (defaults["base_url"] if base_url is None else base_url).strip()
    from engine.pipeline import ENV_MODEL

    if not model:
        return False, f"no LLM model: type one under LLM endpoint, or set {ENV_MODEL} and restart the app"
    if base_url:
        return True, f"model {model} at {base_url}"
    if env.get(ENV_API_KEY):
        return True, f"model {model} on the hosted OpenAI API ({ENV_API_KEY} is set)"
    return False, (f"no LLM endpoint: type a base URL under LLM endpoint (a local OpenAI-compatible "
                   f"server), or set {ENV_BASE_URL} or {ENV_API_KEY} and restart the app")


def mode_status(overview: CollectionOverview | None, environ: dict[str, str] | None = None, *,
                model: str | None = None, base_url: str | None = None) -> list[ModeStatus]:
    """Which grading modes can run on this collection with this LLM endpoint, and why not.

    Args:
        overview: The collection (None: none picked yet).
        environ: The server's environment (default os.environ): SEARCHGRADE_LLM_MODEL,
            OPENAI_BASE_URL, OPENAI_API_KEY (only whether it is set is looked at).
        model, base_url: What the form holds; None means the environment's value.
    """
    if overview is None:
        has_qrels, why_not = False, "pick a collection first"
    elif overview.has_qrels:
        has_qrels, why_not = True, f"{overview.judged_queries} queries with judgments"
    else:
        has_qrels, why_not = False, "this collection has no qrels.tsv (query-id, corpus-id, score)"
    llm_ready, why = llm_endpoint(model, base_url, environ)
    if overview is None:
        llm_ready, why = False, "pick a collection first"
    both_why = why_not if not has_qrels else why
    return [
        ModeStatus("qrels", MODE_LABELS["qrels"], has_qrels, why_not),
        ModeStatus("llm", MODE_LABELS["llm"], llm_ready, why),
        ModeStatus("qrels_llm", MODE_LABELS["qrels_llm"], has_qrels and llm_ready, both_why),
    ]


def query_set_choices(store: Store, collection_name: str) -> list[tuple[str, str]]:
    """LLM runs of a collection whose generated queries can be reused (queries_from): (run id, label),
    newest first. A stopped run counts: its queries were stored before any judging."""
    counts = store.query_counts()
    return [(r.run_id, f"{run_label(r)} · {counts[r.run_id]:,} queries")
            for r in store.list_runs(collection_name)
            if r.mode == "llm" and counts.get(r.run_id)]


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
