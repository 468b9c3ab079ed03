"""Across the runs of a suite: does the judge see the same regressions people see?

A suite evaluates its frozen queries again and again (engine/suites/); each run's change from the
one before, per strategy, is the decision its alerts are about. Here every (run, strategy) is a
system scored per query under people's grades and under each judge's (engine/judges/report.py),
the queries paired across runs by their text (the queries every run's figures rest on), and
engine/statistics/decisions.py compares: Kendall's tau over all the (run, strategy) systems, and
the verdicts on each strategy's change from one run to the next (one family), agreeing when the
judge sees the same drop, the same gain, or no change where people see none. Judges are compared by
name: a judge missing from a run is left out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.judges.people import run_grades
from searchgrade.engine.judges.report import decision_metric, metric_values, shared_queries
from searchgrade.engine.judges.spec import PANEL
from searchgrade.engine.metrics import higher_is_better
from searchgrade.engine.run.strategies import strategy_order
from searchgrade.engine.statistics.decisions import OUTER_RESAMPLES, DecisionAgreement, compare_gradings

if TYPE_CHECKING:
    from searchgrade.engine.store import Store

#: A system across a suite: "RUN_ID STRATEGY".
SEPARATOR = " "


@dataclass
class SuiteDecisions:
    suite: str
    #: The suite's complete runs with judge grades, oldest first.
    runs: list[str]
    metric: str
    #: Queries (by text) every run's figures rest on.
    queries: int
    judges: dict[str, DecisionAgreement] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def suite_runs(store: Store, suite_name: str) -> list[str]:
    """The suite's source run and its complete runs, oldest first."""
    suite = store.get_suite(suite_name)
    runs = [suite.source_run_id] + [e["run_id"] for e in store.suite_entries(suite_name)
                                    if e["run_id"] and e.get("run_status") == "complete"]
    return list(dict.fromkeys(runs))


def suite_decisions(store: Store, suite_name: str, metric: str | None = None, *,
                    outer_resamples: int = OUTER_RESAMPLES, seed: int = 0) -> SuiteDecisions:
    """Each judge's decisions on the suite's changes against people's (see the module)."""
    graded = []
    notes = []
    for run_id in suite_runs(store, suite_name):
        try:
            g = run_grades(store, run_id)
        except SearchGradeError as exc:
            notes.append(f"run {run_id} left out: {exc}")
            continue
        if g.judges:
            graded.append(g)
    label = metric or "dcg"
    if len(graded) < 2:
        notes.append(f"{len(graded)} run(s) of suite {suite_name} have judge grades: comparing changes needs 2.")
        return SuiteDecisions(suite_name, [g.run.run_id for g in graded], label, 0, {}, notes)
    names = [j for j in graded[0].judges if all(j in g.judges for g in graded)]
    # Queries pair across runs as any two runs' do (engine/statistics/pairing.py): by id when every
    # run evaluated a collection's own queries, else by text, a text repeated within a run left out.
    on = "query_id" if all(g.run.mode == "qrels" for g in graded) else "text"
    per_run = []
    repeated = 0
    for g in graded:
        spec, k = decision_metric(g.run.k, g.run.depth, metric)
        top = g.top(k)
        strategies = strategy_order(list(top))
        key = {q: q if on == "query_id" else g.texts[q] for q in g.query_ids}
        counts = Counter(key.values())
        repeated += sum(1 for q in g.query_ids if counts[key[q]] > 1)
        by_key = {key[q]: q for q in shared_queries(g, top, strategies, names) if counts[key[q]] == 1}
        per_run.append((g, spec, k, top, strategies, by_key))
    if repeated:
        notes.append(f"{repeated} queries left out: the same text appears twice in one run, so it cannot be paired.")
    common = set.intersection(*(set(r[5]) for r in per_run))
    first = per_run[0][0]
    # In the first run's query id order, as every paired comparison orders its queries.
    texts = [k for k in (q if on == "query_id" else first.texts[q] for q in sorted(first.query_ids)) if k in common]
    label = f"{per_run[-1][1].key}@{per_run[-1][2]}"
    if not texts or not names:
        notes.append("No query has every run's top k graded by people and by the same judges: no change can be "
                     "compared.")
        return SuiteDecisions(suite_name, [g.run.run_id for g in graded], label, 0, {}, notes)
    people: dict[str, list[float]] = {}
    proxies: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    for g, spec, k, top, strategies, by_text in per_run:
        queries = [by_text[t] for t in texts]
        for s, values in metric_values(top, strategies, queries, g.people, g.pool, spec, k).items():
            people[f"{g.run.run_id}{SEPARATOR}{s}"] = values
        for n in names:
            for s, values in metric_values(top, strategies, queries, g.judges[n], g.pool, spec, k).items():
                proxies[n][f"{g.run.run_id}{SEPARATOR}{s}"] = values
    comparisons = [(f"{a.run.run_id}{SEPARATOR}{s}", f"{b.run.run_id}{SEPARATOR}{s}")
                   for (a, *_, sa, _), (b, *_, sb, _) in zip(per_run, per_run[1:], strict=False)
                   for s in sa if s in sb]
    decisions = compare_gradings(people, proxies, comparisons=comparisons,
                                 higher_is_better=higher_is_better(per_run[-1][1].key),
                                 outer_resamples=outer_resamples, seed=seed)
    ordered = [n for n in names if n != PANEL] + ([PANEL] if PANEL in names else [])
    return SuiteDecisions(suite_name, [g.run.run_id for g in graded], label, len(texts),
                          {n: decisions.by_proxy[n] for n in ordered}, notes)
