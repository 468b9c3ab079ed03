"""How far each judge of a run can be trusted where it matters: its decisions, its stability, its
item agreement with people, and its cost; and which judge to use.

For a complete run with judge grades (engine/judges/people.py):

1. **Decisions.** Each strategy's metric (DCG@k unless another is asked for) per query, under
   people's grades and under each judge's, on the queries where every strategy's top k is graded
   by people and by every judge (a judge's failed judgment counts 0, as in the run's metrics);
   NDCG's ideal and recall's denominator come from people's grades on both sides (one ideal).
   engine/statistics/decisions.py gives Kendall's tau and the pairwise verdict agreement with
   their intervals, and the comparisons a judge decides differently.
2. **Stability**, where ``--repeat`` asked again (engine/judges/repeat.py): test-retest agreement
   (engine/statistics/retest.py), and how far each strategy's metric moves when the repeats'
   grades stand for the first ones: a judge whose metric moves more than the smallest difference it
   calls significant is flagged.
3. **Item agreement**: weighted kappa (linear), exact agreement and bias (judge - people) with
   their intervals on every pair both graded (engine/statistics/judge_vs_human.py).
4. **Cost** and the cheapest sufficient judge (engine/judges/choice.py).

A panel is listed as the judge "panel", its members before it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.judges.choice import (
    Candidate,
    Cost,
    Recommendation,
    cheapest_sufficient,
    panel_cost,
    stage_cost,
)
from searchgrade.engine.judges.people import Pair, RunGrades, run_grades
from searchgrade.engine.judges.spec import PANEL, panel_grade
from searchgrade.engine.metrics import compute_metrics, higher_is_better, metric_record, parse_metric
from searchgrade.engine.metrics.dcg import dcg
from searchgrade.engine.run.config import JUDGE_MAX_GRADE, JUDGE_THRESHOLD
from searchgrade.engine.run.strategies import strategy_order
from searchgrade.engine.statistics.decisions import OUTER_RESAMPLES, DecisionAgreement, compare_gradings
from searchgrade.engine.statistics.judge_vs_human import JudgeVsHuman, judge_vs_human
from searchgrade.engine.statistics.retest import Retest, retest_agreement

if TYPE_CHECKING:
    from searchgrade.engine.metrics import MetricSpec
    from searchgrade.engine.store import Store

#: Fewer pairs graded by both than this: no item agreement is read (as on the trust panel).
MIN_PAIRS = 30
#: strategy -> query -> its top k doc ids.
Top = Mapping[str, Mapping[str, list[str]]]


@dataclass
class Stability:
    """A judge asked the same pairs again."""

    retest: Retest
    #: strategy -> the largest change of its mean metric over the repeats.
    movement: dict[str, float]
    #: The smallest difference between two strategies this judge calls significant (None: none).
    smallest_difference: float | None

    @property
    def flagged(self) -> bool:
        """The judge's own noise moves a strategy more than a difference it reports as real."""
        return self.smallest_difference is not None and max(self.movement.values(), default=0.0) > self.smallest_difference


@dataclass
class JudgeFigures:
    """Everything the report says about one judge."""

    name: str
    #: Pairs graded by both this judge and people (item agreement), and the judge's failed pairs.
    pairs: int
    failures: int
    item: JudgeVsHuman
    decision: DecisionAgreement | None
    stability: Stability | None
    cost: Cost
    recommended: bool = False


@dataclass
class JudgeReport:
    run_id: str
    metric: str
    k: int
    higher_is_better: bool
    people_source: str
    strategies: list[str]
    #: The queries the decision figures rest on.
    queries: list[str]
    judges: list[JudgeFigures]
    recommendation: Recommendation
    notes: list[str] = field(default_factory=list)

    def judge(self, name: str) -> JudgeFigures:
        return next(j for j in self.judges if j.name == name)


def decision_metric(run_k: int, depth: int, metric: str | None) -> tuple[MetricSpec, int]:
    """The metric decisions are read on (DCG@k by default) and its cut-off.

    Raises:
        SearchGradeError: an unknown metric, one that reads which results were judged (there is no
            hole here: both sides grade every result), or a cut-off beyond the run's depth.
    """
    spec = parse_metric(metric or f"dcg@{run_k}")
    record = metric_record(spec.name)
    if record.unjudged or record.diagnostic or record.function is None:
        raise SearchGradeError(f"--metric {spec.label} reads which results were judged; both sides here grade "
                               "every result: choose a metric of grades (dcg, ndcg, precision, recall, mrr, map)")
    k = spec.resolve_k(run_k, depth)
    if k > depth:
        raise SearchGradeError(f"--metric {spec.label}: the run kept {depth} results per query; use k <= {depth}")
    spec.check_threshold(JUDGE_THRESHOLD)
    return spec, k


def metric_values(top: Top, strategies: Sequence[str], queries: Sequence[str],
                  grades: Mapping[Pair, int | None], pool: Mapping[str, list[int]], spec: MetricSpec,
                  k: int) -> dict[str, list[float]]:
    """strategy -> the metric per query (in ``queries`` order) with ``grades`` (None or absent: 0).

    ``pool`` is people's grades per query: recall's and MAP's relevant count on both sides, and
    NDCG's one ideal: NDCG here is DCG@k over the ideal DCG@k of people's grades (0 when that is 0),
    under either grading, so a judge's NDCG can exceed 1 where it grades above people.
    """
    if spec.name == "ndcg":
        ideal = {q: dcg(sorted(pool.get(q, []), reverse=True), [], k, JUDGE_THRESHOLD) for q in queries}
        return {s: [dcg([grades.get((q, d)) for d in top[s][q]], [], k, JUDGE_THRESHOLD) / ideal[q] if ideal[q] > 0
                    else 0.0 for q in queries] for s in strategies}
    return {s: [compute_metrics([grades.get((q, d)) for d in top[s][q]], pool.get(q, []), k, JUDGE_THRESHOLD,
                                [spec.key], max_grade=JUDGE_MAX_GRADE)[spec.key] for q in queries]
            for s in strategies}


def shared_queries(grades: RunGrades, top: Top, strategies: Sequence[str],
                   judges: Sequence[str]) -> list[str]:
    """The queries every strategy answered whose top k people and every judge graded."""
    def covered(q: str) -> bool:
        for s in strategies:
            if q not in top[s]:
                return False
            for d in top[s][q]:
                if (q, d) not in grades.people or any((q, d) not in grades.judges[j] for j in judges):
                    return False
        return True

    return [q for q in grades.query_ids if covered(q)]


def _item(grades: RunGrades, name: str) -> tuple[JudgeVsHuman, int]:
    judged = grades.judges[name]
    pairs = [(q, int(g), grades.people[(q, d)]) for (q, d), g in sorted(judged.items())
             if g is not None and (q, d) in grades.people]
    return judge_vs_human(pairs), sum(g is None for g in judged.values())


def _repeats(store: Store, grades: RunGrades) -> dict[str, dict[Pair, dict[int, int]]]:
    """judge -> pair -> repetition -> grade (a panel's from its members' where all repeated it)."""
    out: dict[str, dict[Pair, dict[int, int]]] = {}
    for r in store.judge_repeats(grades.run.run_id):
        if r["grade"] is not None:
            out.setdefault(r["judge"], {}).setdefault((r["query_id"], r["doc_id"]), {})[r["repetition"]] = r["grade"]
    members = [j for j in grades.judges if j != PANEL]
    if PANEL in grades.judges and members and all(m in out for m in members):
        aggregate = (grades.run.config.get("judge_aggregate") or "median")
        panel: dict[Pair, dict[int, int]] = {}
        for pair, by_rep in out[members[0]].items():
            for rep in by_rep:
                said = [out[m].get(pair, {}).get(rep) for m in members]
                if all(g is not None for g in said):
                    panel.setdefault(pair, {})[rep] = panel_grade(said, aggregate)  # type: ignore[assignment]
        out[PANEL] = panel
    return out


def _stability(grades: RunGrades, name: str, repeats: Mapping[Pair, Mapping[int, int]], top: Top,
               strategies: Sequence[str], queries: Sequence[str], spec: MetricSpec, k: int,
               decision: DecisionAgreement | None) -> Stability | None:
    judged = grades.judges[name]
    graded = [(q, [judged[(q, d)], *(by_rep[r] for r in sorted(by_rep))]) for (q, d), by_rep in sorted(repeats.items())
              if judged.get((q, d)) is not None]
    if not graded:
        return None
    movement: dict[str, float] = {}
    if queries:
        base = metric_values(top, strategies, queries, judged, grades.pool, spec, k)
        for rep in sorted({r for by_rep in repeats.values() for r in by_rep}):
            again = dict(judged)
            again.update({pair: by_rep[rep] for pair, by_rep in repeats.items() if rep in by_rep})
            moved = metric_values(top, strategies, queries, again, grades.pool, spec, k)
            for s in strategies:
                change = abs(sum(moved[s]) - sum(base[s])) / len(queries)
                movement[s] = max(movement.get(s, 0.0), change)
    significant = [abs(v.proxy.diff) for v in (decision.verdicts if decision else []) if v.proxy.significant]
    return Stability(retest_agreement(graded), movement, min(significant) if significant else None)


def _costs(store: Store, grades: RunGrades) -> dict[str, Cost]:
    from searchgrade.engine.judges.panel import judge_stage
    from searchgrade.engine.judges.repeat import repeat_stage
    from searchgrade.engine.llm.judge import STAGE

    usage = store.llm_usage(grades.run.run_id)
    prices = grades.run.config.get("judge_prices") or {}
    members = [j for j in grades.judges if j != PANEL]
    panel = PANEL in grades.judges
    costs = {}
    for name in members:
        stage = judge_stage(name) if panel else STAGE
        counters = usage.get(stage) if usage.get(stage, {}).get("ok") else usage.get(repeat_stage(name))
        costs[name] = stage_cost(counters, prices.get(name))
    if panel:
        costs[PANEL] = panel_cost([costs[m] for m in members])
    return costs


def judge_report(store: Store, run_id: str, metric: str | None = None, *,
                 outer_resamples: int = OUTER_RESAMPLES, seed: int = 0) -> JudgeReport:
    """Every judge of a run measured against people (see the module).

    Raises:
        SearchGradeError: the run is not complete, has no judge grades, its labels are on another
            scale than 0-3 or binary, or the metric cannot be read here.
    """
    grades = run_grades(store, run_id)
    run = grades.run
    if not grades.judges:
        raise SearchGradeError(f"run {run.run_id} has no judge grades: evaluate with --qrels --llm --judge-models "
                               "MODEL[,MODEL] (every retrieved pair judged) or --llm")
    spec, k = decision_metric(run.k, run.depth, metric)
    top = grades.top(k)
    strategies = strategy_order(list(top))
    names = [j for j in grades.judges if j != PANEL] + ([PANEL] if PANEL in grades.judges else [])
    queries = shared_queries(grades, top, strategies, names)
    notes = []
    if not queries:
        notes.append(_why_no_queries(grades, top, strategies, names, k))
    decisions = {}
    higher = higher_is_better(spec.key)
    if queries and strategies:
        people = metric_values(top, strategies, queries, grades.people, grades.pool, spec, k)
        proxies = {name: metric_values(top, strategies, queries, grades.judges[name], grades.pool, spec, k)
                   for name in names}
        decisions = _decisions(store, grades, people, proxies, f"{spec.key}@{k}", higher, outer_resamples, seed)
    repeats = _repeats(store, grades)
    costs = _costs(store, grades)
    figures = []
    for name in names:
        item, failures = _item(grades, name)
        decision = decisions.get(name)
        stability = (_stability(grades, name, repeats[name], top, strategies, queries, spec, k, decision)
                     if name in repeats else None)
        figures.append(JudgeFigures(name, item.n_pairs, failures, item, decision, stability,
                                    costs.get(name, stage_cost(None, None))))
    recommendation = _recommend(figures)
    for f in figures:
        f.recommended = f.name == recommendation.name
    return JudgeReport(run.run_id, f"{spec.key}@{k}", k, higher, grades.people_source,
                       strategies, queries, figures, recommendation, notes)


#: The kept reads' part holding each judge's decision agreement per outer resample.
KEPT_PART = "judges_outer"


def _decisions(store: Store, grades: RunGrades, people: dict[str, list[float]],
               proxies: dict[str, dict[str, list[float]]], metric: str, higher: bool, outer_resamples: int,
               seed: int) -> dict[str, DecisionAgreement]:
    """compare_gradings, its outer resamples (the costly part: the paired procedure run anew on each)
    kept in the store for the run (``kept_reads``, cleared when the run is graded again): keyed by
    what they depend on besides the run's own grades, the metric, the judges, people's latest
    rating, the resamples and the seed."""
    run = grades.run
    key = json.dumps({"metric": metric, "judges": sorted(proxies), "seed": seed, "outer": outer_resamples,
                      "labels": str(store.latest_label_time(run.collection_name))}, sort_keys=True)
    text = store.kept_read(run.run_id, KEPT_PART, key)
    kept = json.loads(text) if text is not None else None
    decided = compare_gradings(people, proxies, higher_is_better=higher, outer_resamples=outer_resamples, seed=seed,
                               outer=kept)
    if kept is None and outer_resamples > 0 and any(len(v) for v in decided.outer.values()):
        store.keep_reads(run.run_id, {(KEPT_PART, key): json.dumps({n: v.tolist() for n, v in decided.outer.items()})},
                         finished_at=run.finished_at)
    return decided.by_proxy


def _recommend(figures: Sequence[JudgeFigures]) -> Recommendation:
    decided = [f for f in figures if f.decision is not None and f.decision.agreement.value is not None]
    if decided:
        return cheapest_sufficient([Candidate(f.name, f.decision.agreement, f.cost) for f in decided])
    rated = [f for f in figures if f.item.n_pairs >= MIN_PAIRS]
    recommendation = cheapest_sufficient([Candidate(f.name, f.item.kappa_linear, f.cost) for f in rated],
                                         "weighted kappa")
    if recommendation.name is None:
        return recommendation
    return Recommendation(recommendation.name, recommendation.sufficient,
                          recommendation.text + " (Read on item agreement: no judge's decisions could be compared.)")


def _why_no_queries(grades: RunGrades, top: Top, strategies: Sequence[str], names: Sequence[str], k: int) -> str:
    pairs = {(q, d) for s in strategies for q, docs in top[s].items() for d in docs}
    unrated = sum(p not in grades.people for p in pairs)
    missing = {j: sum(p not in grades.judges[j] for p in pairs) for j in names}
    parts = []
    if unrated:
        parts.append(f"people graded {len(pairs) - unrated:,} of the {len(pairs):,} top-{k} pairs (rate whole "
                     "queries on the Review page)")
    for judge, n in missing.items():
        if n:
            parts.append(f"{judge} graded {len(pairs) - n:,} of them (evaluate with --judge-models to have every "
                         "retrieved pair judged)")
    return ("No query has every strategy's top " + str(k) + " graded by people and by every judge, so no decision "
            "can be compared: " + ("; ".join(parts) or "no strategy answered a query") + ".")
