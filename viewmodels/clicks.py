"""What click judgments cover and rest on: each strategy's coverage beside its figures, within a
run and across runs; what a run's click grades were made with (the cut-points, the position bias,
each with its source); and what a click log supports (`searchgrade clicks show`: its interventions,
the position bias they give, its interleaving comparisons).

Coverage is the share of a strategy's top k that users were shown often enough for the log to
judge (engine/store/clicks.py); a figure graded by clicks is only as good as it. The comparisons
between strategies read it through judged@k (engine/statistics/holes.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import RunRecord, Store
from searchgrade.engine.store.clicks import CLICK_SOURCE

#: The stored grades the LLM judge gave (where it filled the clicks' holes).
JUDGE_SOURCE = "llm"

#: Below this coverage a strategy's click-graded figures are said to rest mostly on holes.
LOW_COVERAGE = 0.5


def click_graded(run: RunRecord) -> bool:
    """A run graded by clicks (mode ``clicks``)."""
    return run.mode == "clicks" or run.label_source == "clicks"


def coverage(store: Store, run: RunRecord, k: int) -> dict[str, float] | None:
    """strategy -> its coverage at k, in display order; None for a run not graded by clicks."""
    if not click_graded(run):
        return None
    found = store.click_coverage(run.run_id, k)
    return {s: found[s] for s in strategy_order(found)}


def coverage_by_cutoff(store: Store, run: RunRecord, ks: Iterable[int],
                       source: str = CLICK_SOURCE) -> dict[tuple[str, int], float]:
    """(strategy, k) -> coverage (or another source's share), for a click-graded run's cut-offs
    (empty otherwise)."""
    if not click_graded(run):
        return {}
    return {(s, k): v for k in sorted(set(ks)) for s, v in store.click_coverage(run.run_id, k, source).items()}


def judge_share(store: Store, run: RunRecord, k: int) -> dict[str, float]:
    """strategy -> the share of its top k the LLM judge graded where the clicks left holes
    (``--clicks --llm --judge-unjudged``, or a pool judged after); empty when the judge filled none."""
    if not click_graded(run) or "llm" not in (run.label_source or "").split("+"):
        return {}
    return {s: v for s, v in store.click_coverage(run.run_id, k, JUDGE_SOURCE).items()}


def coverage_words(found: dict[str, float], k: int, judged: dict[str, float] | None = None) -> str:
    """ "coverage (the share of each top 10 the click log judges): Full-text (BM25) 95%, Hybrid 56%";
    with the judge's share where it filled the holes: "Hybrid 56% (+ 44% by the judge)"."""
    judged = judged or {}
    cells = ", ".join(f"{label(s)} {v:.0%}" + (f" (+ {judged[s]:.0%} by the judge)" if judged.get(s) else "")
                      for s, v in found.items())
    low = [label(s) for s, v in found.items() if v + judged.get(s, 0.0) < LOW_COVERAGE]
    out = f"coverage (the share of each top {k} users were shown often enough for the click log to judge): {cells}"
    if low:
        out += (f". {', '.join(low)} {'rests' if len(low) == 1 else 'rest'} mostly on unjudged results, which count "
                f"as not relevant: {'its' if len(low) == 1 else 'their'} figures say how much "
                f"{'it resembles' if len(low) == 1 else 'they resemble'} what users were shown, not how good "
                f"{'it is' if len(low) == 1 else 'they are'}")
    return out


@dataclass
class GradesMadeWith:
    """What a click-graded run's grades were made with, in words (from its stats)."""

    model: str
    log: str
    lines: list[str] = field(default_factory=list)


def grades_made_with(run: RunRecord) -> GradesMadeWith | None:
    """The cut-points and the position bias of a click-graded run's grades, each with its source;
    None for another run (or one stored before they were recorded)."""
    clicks = (run.stats or {}).get("clicks")
    if not click_graded(run) or not clicks:
        return None
    out = GradesMadeWith(clicks.get("model", "?"), clicks.get("log", "?"))
    examined = clicks.get("min_examinations", clicks.get("min_impressions"))
    out.lines.append(f"{clicks.get('judged_pairs', 0):,} pairs judged by {out.model} over log {out.log}; "
                     f"{clicks.get('unjudged_pairs', 0):,} examined fewer than {examined} times left unjudged")
    if clicks.get("filled_by_judge"):
        model = ((run.config or {}).get("llm") or {}).get("model", "the LLM judge")
        out.lines.append(f"{clicks['filled_by_judge']:,} retrieved pairs the clicks never judged graded by the judge "
                         f"({model}; --judge-unjudged); click grades win where there are both")
    thresholds = clicks.get("thresholds")
    if thresholds:
        from searchgrade.engine.clicks.thresholds import Thresholds

        out.lines.append("cut-points: " + Thresholds(tuple(thresholds["cutpoints"]), thresholds["source"],
                                                      thresholds.get("base_rate"), thresholds.get("split"),
                                                      thresholds.get("chosen_rate"), thresholds.get("pairs", 0),
                                                      thresholds.get("reason", "")).words())
    bias = clicks.get("position_bias")
    if bias:
        theta = ", ".join(f"{t:.2f}" for t in bias["theta"][:10])
        out.lines.append(f"position bias (examination at positions 1, 2, ...): {theta} ({bias['reason']})")
    return out


@dataclass
class ClickLogReport:
    """`searchgrade clicks show LOG`: what a click log supports."""

    log_name: str
    record: dict[str, Any]
    pairs: int
    intervention_pairs: int
    position_bias: dict[str, Any] | None
    thresholds: dict[str, Any] | None
    interleaving: list[dict[str, Any]]
    interleaving_sentences: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"log": self.log_name, "events": self.record, "pairs": self.pairs,
                "intervention_pairs": self.intervention_pairs, "position_bias": self.position_bias,
                "thresholds": self.thresholds, "interleaving": self.interleaving}

    def lines(self) -> list[str]:
        out = [f"log {self.log_name}: {self.pairs:,} (query, document) pairs with clicks"
               + (f" from {self.record['events']:,} events" if self.record else "")]
        if self.position_bias is not None:
            theta = ", ".join(f"{t:.3f}" for t in self.position_bias["theta"][:10])
            out.append(f"{self.intervention_pairs:,} pairs were shown at two or more positions (interventions: "
                       "several rankers, randomised or swapped results)")
            out.append(f"position bias, examination at positions 1, 2, ...: {theta} ({self.position_bias['reason']})")
        if self.thresholds is not None:
            from searchgrade.engine.clicks.thresholds import Thresholds

            t = self.thresholds
            out.append("pbm grades: " + Thresholds(tuple(t["cutpoints"]), t["source"], t["base_rate"], t["split"],
                                                   t["chosen_rate"], t["pairs"], t["reason"]).words())
        if self.interleaving_sentences:
            out.append("team-draft interleaving (every query once; the pairs of systems are one family):")
            out += [f"  {s}" for s in self.interleaving_sentences]
        return out


def click_log_report(store: Store, log_name: str) -> ClickLogReport:
    """A log's clicks graded by the default model, the position bias and cut-points that took, and
    its interleaving comparisons."""
    from searchgrade.engine.clicks.grading import click_grades
    from searchgrade.engine.clicks.interleaving_log import log_comparisons
    from searchgrade.engine.clicks.models import ClickCounts
    from searchgrade.engine.clicks.position_bias import linked_positions

    store.query_log(log_name)  # an unknown log: one line naming the stored ones
    record = store.click_log(log_name)
    bias = thresholds = None
    pairs = interventions = 0
    if record is not None:
        stats = store.click_stats(log_name)
        keys = list(zip(stats["rank"].tolist(), stats["doc_id"].tolist(), strict=True))
        codes: dict[tuple[int, str], int] = {}
        pair = [codes.setdefault(k, len(codes)) for k in keys]
        counts = ClickCounts.of(pair, stats["position"], stats["impressions"], stats["clicks"], len(codes))
        grades = click_grades(counts, "pbm")
        pairs = len(codes)
        interventions = int(linked_positions(counts)[1].sum())
        bias = grades.position_bias.to_json() if grades.position_bias else None
        thresholds = grades.thresholds.to_json()
    comparisons = log_comparisons(store, log_name)
    return ClickLogReport(log_name, record or {}, pairs, interventions, bias, thresholds,
                          [c.to_json() for c in comparisons], [c.sentence() for c in comparisons])


def coverage_across_runs(store: Store, run_ids: Iterable[str], k: int) -> pd.DataFrame:
    """Each click-graded run's coverage at k per strategy (Run, Created, Strategy, strategy,
    Coverage, By the judge: the share the LLM judge graded where the clicks left holes, 0 without),
    oldest first: what Compare and Trends put beside figures from different runs, whose coverage may
    differ as much as two strategies' do."""
    rows = []
    for run_id in dict.fromkeys(run_ids):
        run = store.get_run(run_id)
        if not click_graded(run) or k > run.depth:
            continue
        filled = judge_share(store, run, k)
        for strategy, value in (coverage(store, run, k) or {}).items():
            rows.append({"Run": run.name or run.run_id, "run_id": run.run_id, "Created": run.created_at,
                         "Strategy": label(strategy), "strategy": strategy, "Coverage": value,
                         "By the judge": filled.get(strategy, 0.0)})
    frame = pd.DataFrame(rows, columns=["Run", "run_id", "Created", "Strategy", "strategy", "Coverage",
                                        "By the judge"])
    return frame.sort_values(["Created", "strategy"], kind="stable").reset_index(drop=True)


def run_interleaving(store: Store, run: RunRecord) -> list[dict[str, Any]]:
    """The team-draft interleaving comparisons of a run's query set, from its log's interleaving
    results over the set's queries (each with its sentence); empty when there are none."""
    from searchgrade.engine.clicks.interleaving_log import log_comparisons
    from searchgrade.engine.traffic.query_sets import set_queries

    set_name = (run.config or {}).get("query_set")
    if not set_name or not store.query_set_exists(set_name):
        return []
    log_name = store.query_set(set_name)["log_name"]
    if store.interleaving_log(log_name) is None:
        return []
    ranks = [q.log_rank for q in set_queries(store, set_name)]
    return [{**c.to_json(), "sentence": c.sentence()} for c in log_comparisons(store, log_name, ranks)]
