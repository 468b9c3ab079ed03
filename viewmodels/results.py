"""The Results screen: one run at a metric and cut-off, with the headline, per-strategy tables
and charts, best and worst queries and latency (why queries fail: viewmodels/failures.py)."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Any

import pandas as pd

from searchgrade.engine.metrics import higher_is_better
from searchgrade.engine.run.strategies import base_of, display_rank, label, pairs, reranker_of, strategy_order
from searchgrade.engine.statistics.paired import PairedDifference
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.ann_index import ann_index_text
from searchgrade.viewmodels.common import (
    PRIMARY_METRIC,
    WITH,
    WITHOUT,
    Sentence,
    best_row,
    is_llm_run,
    metric_label,
    metric_rows,
    one_session,
    primary_k,
)
from searchgrade.viewmodels.embedding import embedding_text
from searchgrade.viewmodels.llm_panel import llm_panel
from searchgrade.viewmodels.recommendations import recommendations
from searchgrade.viewmodels.recompute import Figures
from searchgrade.viewmodels.results_cache import RunReads
from searchgrade.viewmodels.results_view import Headline, ResultsView
from searchgrade.viewmodels.runs import skipped_messages
from searchgrade.viewmodels.significance import (
    family_note,
    family_size,
    reranker_frame,
    reranker_rows,
    results_comparisons,
    significance,
)


@one_session
def results_view(store: Store, run_id: str, metric: str = PRIMARY_METRIC, k: int | None = None,
                 n_queries: int = 10) -> ResultsView:
    """The results page for one run at metric@k (k defaults to the headline's k).

    A complete run's reads are kept the first time they are computed (viewmodels/results_cache.py).
    """
    run = store.get_run(run_id)
    k = k if k is not None else primary_k(run)
    reads = RunReads(store, run)
    figures = Figures(store, run, k)
    table = figures.summary()
    strategies = strategy_order(table["strategy"].unique().tolist())
    selected = metric_rows(table, metric)
    # Read only where something is computed afresh (kept tests and reranker rows need no values).
    wide = functools.cache(lambda: figures.wide(metric))
    tested = results_comparisons(store, run, metric, k, selected, wide)
    headline = _headline(selected, metric, k, store.query_count(run.run_id), tested)
    by_position = relevance_by_position(store, run, k, reads)
    shorts = short_lists(by_position, k)
    best, worst = best_and_worst_queries(store, figures, n_queries, reads)
    view = ResultsView(
        run=run,
        metric=metric,
        k=k,
        headline=headline,
        strategies=strategies,
        metric_summary=selected,
        metric_table=with_without(selected),
        relevance_table=with_without(metric_rows(table, "mean_relevance")),
        by_position=by_position,
        best_queries=best,
        worst_queries=worst,
        reranker_table=reranker_frame(reads.reranker_rows(metric, k, lambda: reranker_rows(wide(), tested, metric))),
        distribution=relevance_distribution(table, run),
        significance=significance(selected, metric, k, tested),
        recommendations=[],
        latency=latency(store, run, reads),
        notes=list(run.notes),
        llm=llm_panel(store, run, table) if is_llm_run(run) else None,
        ann_index=ann_index_text(run.stats),
        embedding=embedding_text(run.config, run.stats),
        short_lists=shorts,
        short_list_warnings=short_list_sentences(shorts, k),
        comparisons=family_size(tested),
        significance_note=family_note(family_size(tested)) if tested else "",
    )
    view.recommendations = recommendations(store, run, view, figures, reads, tested)
    reads.save()
    return view


def keep_first_view(store: Store, run_id: str) -> None:
    """Compute and keep what a just-completed run's first Results page reads (its headline metric
    at its k, why queries fail and the failed queries of the strategy that fails most): its paired
    tests, instead of resampling every query, and its other reads (viewmodels/results_cache.py),
    instead of joining every result with its grade. This is a head start only: if it fails, one
    warning line says so and the run stays complete (the page computes the same when opened)."""
    from searchgrade.viewmodels.failures import first_failures

    try:
        with store.session():
            results_view(store, run_id)
            first_failures(store, run_id)
    except Exception as exc:  # noqa: BLE001 - the run is complete and stored; only its first page is not ready
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(f"searchgrade: run {run_id} is complete, but its first Results page could not be prepared "
              f"({type(exc).__name__}: {first}); the page computes it when opened", file=sys.stderr)


def _headline(rows: pd.DataFrame, metric: str, k: int, n_queries: int,
              tested: dict[tuple[str, str], PairedDifference]) -> Headline | None:
    """The tiles at the page's metric and k: the best strategy, and the strategies its paired test
    (the page's family) cannot tell from it."""
    if rows.empty:
        return None
    # Ties go to the strategy listed first: baselines before rerankers, the cheaper choice.
    best = best_row(rows, metric)
    sign = 1 if higher_is_better(metric) else -1
    withheld = getattr(tested, "withheld", {})

    def beaten(other: str) -> bool:
        # Significantly, and the best's way (a comparison on condensed lists may favour the other).
        d = tested.get((best["strategy"], other))
        return d is not None and d.significant and sign * d.diff > 0

    others = [s for s in rows["strategy"] if s != best["strategy"]]
    held = [s for s in others if (best["strategy"], s) in withheld]
    ties = [s for s in others if s not in held and not beaten(s)]
    return Headline(metric_label(metric, k), float(best["value"]), float(best["ci_low"]),
                    float(best["ci_high"]), best["strategy"], best["label"], n_queries,
                    n_strategies=len(rows), ties=[label(s) for s in ties], withheld=[label(s) for s in held])


def series_name(twin: str) -> str:
    """The bar chart's series of a reranked twin: "With reranker" for the run's default reranker
    (``X_rerank``), "With tei" for a declared one (``X_tei``)."""
    name = reranker_of(twin)
    return f"With {name}" if name else WITH


def with_without(rows: pd.DataFrame) -> pd.DataFrame:
    """Per retrieval strategy and reranker: the value without and with it, and the change.

    A base that several rerankers rerank (``ann_rerank``, ``ann_tei``, ``ann_cohere``) has a row per
    reranker; when a declared reranker ran, each row is named by its reranked twin ("ANN (dense) +
    tei", its "without" the base's value), else by the base, as a run with the default reranker
    only always read.
    """
    out = []
    values = dict(zip(rows["strategy"], rows["value"], strict=True))
    found = pairs(values)
    declared = any(t is not None and reranker_of(t) is not None for _, t in found)
    for base, reranked in found:
        without, with_ = values.get(base), values.get(reranked) if reranked else None
        if without is None and with_ is None:
            continue
        change = with_ - without if without is not None and with_ is not None else None
        name = label(reranked) if declared and reranked is not None else label(base)
        out.append({"Strategy": name, WITHOUT: without, WITH: with_, "Change": change})
    return pd.DataFrame(out, columns=["Strategy", WITHOUT, WITH, "Change"])


def bar_series(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The bar chart's series: "Without reranker" (one bar per retrieval strategy), then one series
    per reranker (``series_name``: "With reranker" for the default one, "With tei", ...), each bar
    at its base's place on the axis. Columns: Strategy (the base's label: the axis), strategy (the
    bar's own), name (its label: "ANN (dense) + tei"), value, err_plus, err_minus, ci_low, ci_high."""
    by_strategy = rows.set_index("strategy")
    found = pairs(by_strategy.index)
    rows_of: dict[str, list[dict[str, Any]]] = {WITHOUT: []}
    for base in dict.fromkeys(b for b, _ in found):
        if base in by_strategy.index:
            rows_of[WITHOUT].append(_bar(by_strategy, base, base))
    for base, twin in found:
        if twin is not None and twin in by_strategy.index:
            rows_of.setdefault(series_name(twin), []).append(_bar(by_strategy, base, twin))
    return {name: pd.DataFrame(out) for name, out in rows_of.items() if out}


def _bar(by_strategy: pd.DataFrame, base: str, strategy: str) -> dict[str, Any]:
    r = by_strategy.loc[strategy]
    return {"Strategy": label(base), "strategy": strategy, "name": label(strategy), "value": r["value"],
            "err_plus": r["ci_high"] - r["value"], "err_minus": r["value"] - r["ci_low"],
            "ci_low": r["ci_low"], "ci_high": r["ci_high"]}


POSITION_COLUMNS = ["strategy", "rank", "mean_grade", "n", "judge_failed", "with_result", "queries",
                    "mean_grade_all", "label"]


def relevance_by_position(store: Store, run: RunRecord, k: int, reads: RunReads | None = None) -> pd.DataFrame:
    """Per strategy, every rank 1..k: how many queries have a result there and their mean grade.

    Columns (``DashboardReadsMixin.position_means``): strategy, rank, mean_grade (over the ``n``
    queries with a graded result at that rank: unjudged as 0, failed judgments left out and
    counted in judge_failed; NaN where none has one), with_result (queries with a result at that
    rank), queries (queries the strategy answered), mean_grade_all (over every query answered, a
    missing result counting 0: its mean over ranks 1..k is mean relevance@k when no judgment
    failed), label. A rank no query reached is there with with_result 0.
    """
    rows = (reads or RunReads(store, run)).position_means(k)
    by_strategy: dict[str, dict[int, dict[str, Any]]] = {}
    for r in rows:
        by_strategy.setdefault(r["strategy"], {})[r["rank"]] = r
    out = []
    for strategy in sorted(by_strategy, key=lambda s: (display_rank(s), s)):
        ranks = by_strategy[strategy]
        queries = next(iter(ranks.values()))["queries"]
        for rank in range(1, k + 1):
            r = ranks.get(rank) or {"strategy": strategy, "rank": rank, "mean_grade": None, "n": 0,
                                    "judge_failed": 0, "with_result": 0, "queries": queries,
                                    "mean_grade_all": 0.0 if queries else None}
            out.append({**r, "label": label(strategy)})
    frame = pd.DataFrame(out, columns=POSITION_COLUMNS)
    return frame.astype({"mean_grade": float, "mean_grade_all": float})


#: A strategy is flagged when more than this share of the queries it answered got fewer than k results.
SHORT_LIST_SHARE = 0.1
SHORT_LIST_COLUMNS = ["strategy", "Strategy", "queries", "short", "share", "flagged"]


def short_lists(by_position: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per strategy: the queries it answered, how many got fewer than k results (no result at rank
    k), their share, and whether that share is above SHORT_LIST_SHARE (``flagged``)."""
    out = []
    for strategy, frame in by_position.groupby("strategy", sort=False):
        at_k = frame[frame["rank"] == k]
        queries = int(frame["queries"].iloc[0])
        short = queries - (int(at_k["with_result"].iloc[0]) if len(at_k) else 0)
        share = short / queries if queries else 0.0
        out.append({"strategy": strategy, "Strategy": label(strategy), "queries": queries, "short": short,
                    "share": share, "flagged": share > SHORT_LIST_SHARE})
    return pd.DataFrame(out, columns=SHORT_LIST_COLUMNS)


def short_list_sentences(table: pd.DataFrame, k: int) -> list[Sentence]:
    """One warning per flagged strategy: its short lists, and how the metrics count them."""
    return [Sentence(f"{r['Strategy']} returned fewer than {k} results on {r['short']} of {r['queries']} "
                     f"queries ({r['share']:.0%}): each missing place counts as 0 (not relevant) in mean "
                     f"relevance@{k}, the relevance shares and the rank metrics, as in Precision@{k}, so "
                     "a short list is never rewarded.", "warn", r["strategy"])
            for r in table.to_dict("records") if r["flagged"]]


#: Query means equal to this many decimals tie (the SQL ranking in store.query_extremes uses the same).
TIE_DECIMALS = 9

QUERY_COLUMNS = ["query_id", "mean_value", "text", "query_type", "max_value", "best_strategy",
                 "min_value", "worst_strategy"]


def best_and_worst_queries(store: Store, figures: Figures, n: int,
                           reads: RunReads | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The best and worst queries by mean relevance at the figures' k, averaged over strategies.

    Best: the n highest means (ties by query id; means equal to TIE_DECIMALS decimals tie, so
    float rounding in how a mean was summed cannot order them), at most half of the queries
    (rounded up) so a small run lists each query once; worst: the n lowest among the rest. Ranked
    in SQL where the run stored k, else from the recomputed values.
    """
    if figures.stored:
        rows = (reads or RunReads(store, figures.run)).query_extremes("mean_relevance", figures.k, n)
        best = [r for r in rows if r["is_best"]]
        worst = [r for r in rows if not r["is_best"]]
    else:
        means = query_means(store, figures.run, "mean_relevance", figures.k, figures)
        means["tied"] = means["mean_value"].round(TIE_DECIMALS)
        best_frame = means.sort_values(["tied", "query_id"], ascending=[False, True]).head(
            min(n, (len(means) + 1) // 2))
        worst_frame = means[~means["query_id"].isin(best_frame["query_id"])].sort_values(
            ["tied", "query_id"]).head(n)
        best, worst = best_frame.to_dict("records"), worst_frame.to_dict("records")
    return _labelled(best), _labelled(worst)


def _labelled(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([{**r, "best_strategy": label(r["best_strategy"]),
                          "worst_strategy": label(r["worst_strategy"])} for r in rows],
                        columns=QUERY_COLUMNS)


def query_means(store: Store, run: RunRecord, metric: str, k: int,
                figures: Figures | None = None) -> pd.DataFrame:
    """Per query: the metric averaged over strategies, and the best and worst strategy for it
    (strategy ids, not labels)."""
    figures = figures or Figures(store, run, k)
    if figures.stored:
        rows = store.query_metric_means(run.run_id, metric, k)
        return pd.DataFrame(rows, columns=[*QUERY_COLUMNS, "n_strategies"])[QUERY_COLUMNS]
    # A query whose every top-k judgment failed has no mean relevance: it has no place here.
    values = figures.per_query(metric).dropna(subset=["value"])
    if values.empty:
        return pd.DataFrame(columns=QUERY_COLUMNS)
    queries = store.query_table(run.run_id)[["query_id", "text", "query_type"]]
    grouped = values.groupby("query_id")["value"]
    return pd.DataFrame({
        "mean_value": grouped.mean(), "max_value": grouped.max(), "min_value": grouped.min(),
        "best_strategy": values.loc[grouped.idxmax(), ["query_id", "strategy"]].set_index(
            "query_id")["strategy"],
        "worst_strategy": values.loc[grouped.idxmin(), ["query_id", "strategy"]].set_index(
            "query_id")["strategy"],
    }).reset_index().merge(queries, on="query_id")[QUERY_COLUMNS]


def relevance_distribution(table: pd.DataFrame, run: RunRecord) -> pd.DataFrame:
    """Per strategy: share of top-k results highly relevant (3), relevant (>= threshold), not relevant."""
    values = {(r["strategy"], r["metric"]): r["value"] for r in table.to_dict("records")}
    columns = {"pct_relevant": f"% relevant (grade ≥ {run.threshold})",
               "pct_not_relevant": f"% not relevant (grade < {run.threshold})",
               "judged": "% judged"}
    if run.grade_max is None or run.grade_max >= 3:
        columns = {"pct_highly_relevant": "% highly relevant (grade 3)", **columns}
    ordered = strategy_order(s for s, _ in values)
    present = [m for m in columns if any(metric == m for _, metric in values)]
    out = {"Strategy": [label(s) for s in ordered]}
    for metric in present:
        out[columns[metric]] = [100.0 * values[(s, metric)] if (s, metric) in values else float("nan")
                                for s in ordered]
    return pd.DataFrame(out, columns=["Strategy", *(columns[m] for m in present)])


def latency(store: Store, run: RunRecord, reads: RunReads | None = None) -> pd.DataFrame:
    rows = (reads or RunReads(store, run)).latency_summary()
    return pd.DataFrame([{"Strategy": label(r["strategy"]), **r} for r in rows],
                        columns=["Strategy", "strategy", "p50_ms", "p95_ms", "n"])


@dataclass(frozen=True)
class RerankerState:
    """What ran of the reranker in a run, in words, for the titles and the baseline-vs-reranker table."""

    #: A reranked strategy ran beside its baseline (the table has a row).
    compared: bool
    #: A reranked strategy ran at all.
    ran: bool
    #: Why reranked strategies did not run (the run's skipped reasons, with their fix), one line each.
    why_not: list[str]
    #: The strategies that ran, as labels.
    strategies: list[str]

    def title(self, name: str) -> str:
        """The main chart's title: "DCG@10 per strategy, without and with the reranker" only when
        the reranker ran."""
        if self.ran:
            return f"{name} per strategy, without and with the reranker"
        return f"{name} per strategy (no reranker ran)"

    @property
    def table_note(self) -> str:
        """Why the baseline-vs-reranker table has no row ("" when it has)."""
        if self.compared:
            return ""
        ran = ", ".join(self.strategies) or "none"
        if self.why_not:
            return f"No strategy ran both without and with the reranker (this run ran {ran}): " + " ".join(
                line if line.endswith(".") else line + "." for line in self.why_not)
        if self.ran:
            return (f"No strategy ran both without and with the reranker (this run ran {ran}): a reranked "
                    "strategy is compared only with its own baseline; evaluate both to see the change.")
        return (f"No reranked strategy was chosen for this run (it ran {ran}): evaluate a strategy "
                "+ reranker beside its baseline to see what the reranker changes.")


def reranker_state(run: RunRecord, strategies: list[str]) -> RerankerState:
    """What ran of the reranker in ``run`` (its strategies with results: ``strategies``)."""
    reranked = [s for s in strategies if base_of(s) is not None]
    compared = any(base_of(s) in strategies for s in reranked)
    skipped = {s: why for s, why in run.skipped.items() if base_of(s) is not None}
    return RerankerState(compared, bool(reranked), skipped_messages(skipped), [label(s) for s in strategies])
