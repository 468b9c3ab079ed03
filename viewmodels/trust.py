"""How far to trust the judge, from people's ratings of a run's results: judge vs human (weighted
kappa, confusion, bias, with bootstrap CIs), agreement between raters (Krippendorff's alpha), a
verdict in words, and every metric's judge-corrected (prediction-powered) estimate.

Computed live from the collection's ratings (they grow as people rate); the run's stored metrics
are never changed by it.

Judge-corrected estimates rest on *fully rated* queries: for a strategy, a query counts as rated
when every result in its top k has a human grade (the review queue's query mode rates exactly
that). On such a query the metric computed with human grades where people gave one and the
judge's elsewhere (deeper results in an NDCG ideal or a recall pool) is Y, and with the judge's
grades only is Y-hat; engine/statistics/ppi.py corrects the LLM-only mean over all queries by the mean
Y - Y-hat on the rated ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from searchgrade.core.records import ScoredDoc, SearchHits
from searchgrade.engine.labels.ratings import RunLabels, human_grade, latest_per_rater, run_labels
from searchgrade.engine.metrics import METRIC_NAMES
from searchgrade.engine.run.scoring import per_query_metrics
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.statistics.judge_vs_human import Estimate, JudgeVsHuman, judge_vs_human
from searchgrade.engine.statistics.krippendorff import AlphaEstimate, krippendorff_alpha
from searchgrade.engine.statistics.ppi import ppi_mean
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import Sentence, metric_label, plural

#: Fewer rated pairs than this: too few to say anything about the judge.
MIN_PAIRS = 30
#: Fewer fully rated queries than this: the corrected estimate's normal interval is rough.
FEW_QUERIES = 10


@dataclass
class TrustPanel:
    run_id: str
    metric: str
    k: int
    #: Pairs of the run people rated, and how many of those the judge graded too.
    rated_pairs: int
    judge: JudgeVsHuman | None
    raters: AlphaEstimate | None
    verdict: list[Sentence]
    #: Strategy, strategy, LLM-only, LLM CI low/high, Corrected, CI low, CI high, Correction,
    #: Rated queries, Queries (selected metric).
    corrected: pd.DataFrame
    #: The same for every metric: strategy, metric, llm, corrected, ci_low, ci_high, n_rated, n_all.
    corrected_all: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def has_judge_grades(run: RunRecord) -> bool:
    """Runs whose metrics rest on the LLM judge (LLM mode, or qrels with the judge filling gaps)."""
    return run.mode == "llm" or bool(run.config.get("judge_unjudged"))


def _pairs(store: Store, run: RunRecord, labels: RunLabels) -> list[tuple[str, int, int]]:
    judge = {(g["query_id"], g["doc_id"]): g["llm_grade"]
             for g in store.grades_of_queries(run.run_id, sorted({q for q, _ in labels.ratings}))}
    out = []
    for pair, ratings in sorted(labels.ratings.items()):
        grade, j = human_grade(ratings), judge.get(pair)
        if grade is not None and j is not None and 0 <= j <= 3:
            out.append((pair[0], int(j), grade))
    return out


def _raters(labels: RunLabels) -> AlphaEstimate | None:
    units = [[r.grade for r in latest_per_rater(ratings).values()] for ratings in labels.ratings.values()]
    if not any(len(u) >= 2 for u in units):
        return None
    return krippendorff_alpha(units, "ordinal")


def _fmt(estimate: Estimate | AlphaEstimate, digits: int = 2, sign: bool = False) -> str:
    spec = f"{'+' if sign else ''}.{digits}f"
    if estimate.low is None:
        return format(estimate.value, spec)
    return f"{estimate.value:{spec}} (95% CI {estimate.low:{spec}} to {estimate.high:{spec}})"


def verdict(judge: JudgeVsHuman | None, raters: AlphaEstimate | None, rated_pairs: int) -> list[Sentence]:
    """The plain-words reading of the judge's agreement, bias and the raters' own agreement."""
    out = _judge_sentences(judge, rated_pairs)
    if raters is not None and raters.alpha is not None:
        reading = ("reliable" if raters.alpha >= 0.8 else "tentative" if raters.alpha >= 0.667
                   else "unreliable: people disagree among themselves, so no judge can match them well")
        interval = f" (95% CI {raters.ci_low:.2f} to {raters.ci_high:.2f})" if raters.ci_low is not None else ""
        out.append(Sentence(f"Agreement between people: Krippendorff's alpha (ordinal) {raters.alpha:.2f}"
                            f"{interval} on {plural(raters.n_units, 'pair', 'pairs')} rated by two or more "
                            f"people; {reading}.", "good" if raters.alpha >= 0.8 else "info"))
    return out


def _judge_sentences(judge: JudgeVsHuman | None, rated_pairs: int) -> list[Sentence]:
    if judge is None or judge.n_pairs < MIN_PAIRS:
        n = judge.n_pairs if judge else 0
        return [Sentence(f"Too few ratings to say how far to trust the judge: {plural(n, 'pair', 'pairs')} "
                         f"rated by people and graded by the judge (of {rated_pairs} rated). Rate at least "
                         f"{MIN_PAIRS}: the Review page picks a balanced sample.", "warn")]
    out = []
    kappa = judge.kappa_linear
    where = f"on {plural(judge.n_pairs, 'pair', 'pairs')} of {plural(judge.n_queries, 'query', 'queries')}"
    if kappa.value is None:
        out.append(Sentence(f"Agreement is undefined {where}: people or the judge used one grade throughout.",
                            "warn"))
    elif (kappa.low or kappa.value) >= 0.6:
        out.append(Sentence(f"The judge agrees with people substantially: linear weighted kappa {_fmt(kappa)} "
                            f"{where}. Its grades can be trusted to compare strategies.", "good"))
    elif kappa.value >= 0.4:
        out.append(Sentence(f"The judge agrees with people moderately: linear weighted kappa {_fmt(kappa)} "
                            f"{where}. Good enough to compare strategies; read absolute figures from the "
                            "judge-corrected estimates.", "info"))
    else:
        out.append(Sentence(f"The judge often disagrees with people: linear weighted kappa {_fmt(kappa)} "
                            f"{where}. Do not trust its absolute figures: use the judge-corrected estimates, "
                            "or try another judge model or prompt.", "warn"))
    bias = judge.bias
    if bias.value is not None and bias.low is not None and (bias.low > 0 or bias.high < 0):
        way = "higher" if bias.value > 0 else "lower"
        out.append(Sentence(f"It grades {abs(bias.value):.2f} {way} than people on average (95% CI "
                            f"{bias.low:+.2f} to {bias.high:+.2f}): LLM-only figures are "
                            f"{'inflated' if bias.value > 0 else 'deflated'}; the corrected estimates "
                            "remove that.", "warn"))
    elif bias.value is not None:
        out.append(Sentence(f"No systematic bias: the judge's grades differ from people's by "
                            f"{_fmt(bias, sign=True)} on average.", "good"))
    return out


def _hits(store: Store, run: RunRecord, k: int) -> tuple[list[str], dict[str, list[SearchHits | None]]]:
    """Each strategy's top k per query; None where the strategy failed on the query (a backend
    error has no value, as in the stored metrics, not the value of an empty ranking)."""
    ranked = {(r["strategy"], r["query_id"]): r["doc_ids"] for r in store.ranked_doc_ids(run.run_id, k)}
    failed = {(r["strategy"], r["query_id"]) for r in store.failed_queries(run.run_id)}
    query_ids = [q["query_id"] for q in store.queries(run.run_id)]
    hits = {s: [None if (s, q) in failed else
                SearchHits([ScoredDoc(d, 0.0, i) for i, d in enumerate(ranked.get((s, q), []), 1)], 0.0)
                for q in query_ids]
            for s in strategy_order(store.result_strategies(run.run_id))}
    return query_ids, hits


def corrected_estimates(store: Store, run: RunRecord, labels: RunLabels, k: int) -> pd.DataFrame:
    """Every metric's LLM-only mean and judge-corrected estimate per strategy at cut-off k."""
    columns = ["strategy", "metric", "llm", "corrected", "ci_low", "ci_high", "correction", "n_rated", "n_all"]
    human = labels.grades()
    query_ids, hits = _hits(store, run, k)
    rated: dict[str, set[str]] = {}
    for s, strategy_hits in hits.items():
        rated[s] = {q for q, h in zip(query_ids, strategy_hits, strict=True)
                    if h is not None and h.docs and all((q, d.doc_id) in human for d in h.docs)}
    if not any(len(r) >= 2 for r in rated.values()):
        return pd.DataFrame(columns=columns)
    llm: dict[str, dict[str, int]] = {}
    failed: dict[str, set[str]] = {}
    for g in store.grades(run.run_id):
        if g["llm_grade"] is not None:
            llm.setdefault(g["query_id"], {})[g["doc_id"]] = g["llm_grade"]
        else:
            failed.setdefault(g["query_id"], set()).add(g["doc_id"])
    people = {q: dict(docs) for q, docs in llm.items()}
    people_failed = {q: set(docs) for q, docs in failed.items()}
    for (q, d), grade in human.items():
        people.setdefault(q, {})[d] = grade
        people_failed.get(q, set()).discard(d)

    def values(judgments: dict[str, dict[str, int]], failures: dict[str, set[str]]) -> dict[tuple[str, str, str], float]:
        return {(s, q, m): v for s, q, m, _k, v in
                per_query_metrics(hits, query_ids, judgments, run.threshold, [k], failed=failures)}

    y_hat, y = values(llm, failed), values(people, people_failed)
    rows = []
    for s in hits:
        for metric in METRIC_NAMES:
            ids = [q for q in query_ids if (s, q, metric) in y_hat]
            if len([q for q in ids if q in rated[s]]) < 2:
                continue
            predicted = [y_hat[(s, q, metric)] for q in ids]
            truth = [y.get((s, q, metric), math.nan) if q in rated[s] else None for q in ids]
            try:
                est = ppi_mean(predicted, truth)
            except ValueError:
                continue
            rows.append((s, metric, est.llm_mean, est.estimate, est.ci_low, est.ci_high, est.correction,
                         est.n_rated, est.n_all))
    return pd.DataFrame(rows, columns=columns)


def trust_panel(store: Store, run_id: str, metric: str, k: int) -> TrustPanel:
    """The Results page's "How far to trust the judge" for a run at metric@k."""
    run = store.get_run(run_id)
    labels = run_labels(store, run)
    if not labels.ratings:
        return TrustPanel(run.run_id, metric, k, 0, None, None, [], pd.DataFrame(), pd.DataFrame())
    pairs = _pairs(store, run, labels)
    judge = judge_vs_human(pairs) if pairs else None
    raters = _raters(labels)
    notes = []
    if labels.stale:
        notes.append(f"{plural(labels.stale, 'rating is', 'ratings are')} of documents whose text changed "
                     "since: left out.")
    all_metrics = corrected_estimates(store, run, labels, k) if has_judge_grades(run) else pd.DataFrame()
    selected = all_metrics[all_metrics["metric"] == metric] if not all_metrics.empty else all_metrics
    summary = {r["strategy"]: r for r in store.metric_summary(run.run_id, k) if r["metric"] == metric}
    table = []
    for r in selected.itertuples() if not selected.empty else []:
        stored = summary.get(r.strategy, {})
        table.append({"Strategy": label(r.strategy), "strategy": r.strategy, "LLM-only": r.llm,
                      "LLM CI low": stored.get("ci_low"), "LLM CI high": stored.get("ci_high"),
                      "Corrected": r.corrected, "CI low": r.ci_low, "CI high": r.ci_high,
                      "Correction": r.correction, "Rated queries": r.n_rated, "Queries": r.n_all})
    corrected = pd.DataFrame(table, columns=["Strategy", "strategy", "LLM-only", "LLM CI low", "LLM CI high",
                                             "Corrected", "CI low", "CI high", "Correction", "Rated queries",
                                             "Queries"])
    if not corrected.empty and corrected["Rated queries"].min() < FEW_QUERIES:
        notes.append(f"The corrected {metric_label(metric, k)} rests on fewer than {FEW_QUERIES} fully rated "
                     "queries for some strategies: its interval is rough. Rate whole queries on the Review "
                     "page (mode: whole queries).")
    return TrustPanel(run.run_id, metric, k, len(labels.ratings), judge, raters,
                      verdict(judge, raters, len(labels.ratings)), corrected, all_metrics, notes)
