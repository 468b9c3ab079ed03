"""Holes in the judgments, shown where decisions are made: Results, `searchgrade show`, Compare.

A strategy whose results were judged less (a low ``judged@k``) loses on every standard metric for
each unjudged result, which counts as not relevant. So beside a metric we show each strategy's
judged@k, and when strategies differ in it by more than ``JUDGED_GAP``, a warning that the
comparison favours the better-judged one, with what tells "worse" from "unjudged": NDCG over the
condensed list (judged results only) and RBP with its residual (how much RBP could still rise if
every hole were relevant). In Compare, a change between two runs whose sign differs between NDCG
and the condensed NDCG is flagged. docs/metrics.md explains the figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from searchgrade.engine.metrics import higher_is_better, metric_key
from searchgrade.engine.run.stored_metrics import Recomputed, check_cutoff
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.statistics.bootstrap import bootstrap_cis
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import METRIC_LABELS

#: Strategies whose judged@k differ by more than this get the warning.
JUDGED_GAP = 0.1
#: The figures shown beside a metric (each at the panel's k).
BESIDE = ("judged", "ndcg_judged", "bpref", "rbp", "rbp_residual")
#: Resamples of the intervals of a cut-off the run did not store.
RESAMPLES = 1_000
#: A change smaller than this is no change (so that 0 against 1e-17 is not a flip).
TINY = 1e-9



@dataclass
class Figure:
    value: float
    low: float
    high: float

    def text(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass
class StrategyHoles:
    """One strategy's metric and, beside it, what says how much of it is unknown."""

    strategy: str
    label: str
    metric: Figure
    judged: float
    condensed: Figure
    bpref: float
    rbp: float
    residual: float


@dataclass
class HolesPanel:
    """A run's strategies at metric@k with their holes; ``warning`` when judged@k differs by more
    than ``gap_threshold`` (None: the comparison is fair on this count)."""

    run_id: str
    metric: str
    k: int
    rows: list[StrategyHoles]
    gap: float
    gap_threshold: float
    warning: str | None = None
    #: Strategies that lead the condensed NDCG although a better-judged one leads the metric.
    reversals: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"metric": self.metric, "k": self.k, "judged_gap": self.gap, "gap_threshold": self.gap_threshold,
                "warning": self.warning, "reversals": self.reversals,
                "strategies": [{"strategy": r.strategy, "value": r.metric.value, "judged": r.judged,
                                "ndcg_judged": r.condensed.value, "bpref": r.bpref, "rbp": r.rbp,
                                "rbp_residual": r.residual}
                               for r in self.rows]}


def metric_label(metric: str, k: int) -> str:
    """ "NDCG, judged only@10"."""
    return f"{METRIC_LABELS.get(metric, metric)}@{k}"


def _figures(store: Store, run: RunRecord, metrics: list[str], k: int) -> dict[tuple[str, str], Figure]:
    """(strategy, metric) -> mean and 95% CI at k: the stored summary, else recomputed."""
    if k in store.stored_cutoffs(run.run_id):
        return {(r["strategy"], r["metric"]): Figure(r["value"], r["ci_low"], r["ci_high"])
                for r in store.metric_summary(run.run_id, k) if r["metric"] in metrics}
    recomputed = Recomputed(store, run, metrics, k)
    keys, columns = [], []
    for i, strategy in enumerate(recomputed.strategies):
        for metric, values in recomputed.values.items():
            column = values[i][~np.isnan(values[i])]
            if len(column):
                keys.append((strategy, metric))
                columns.append(column)
    intervals = bootstrap_cis(columns, n_resamples=RESAMPLES, seed=0) if columns else []
    return {key: Figure(ci.mean, ci.low, ci.high) for key, ci in zip(keys, intervals, strict=True)}


def holes_panel(store: Store, run_id: str, metric: str = "ndcg", k: int | None = None,
                gap_threshold: float = JUDGED_GAP) -> HolesPanel:
    """The run's strategies at metric@k (default: the run's k) beside their judged@k, condensed
    NDCG@k, RBP@k and its residual, and the warning when judged@k differs by more than the gap.

    Raises:
        SearchGradeError: k outside the run's depth, or an unknown metric.
    """
    run = store.get_run(run_id)
    k = k or run.k
    check_cutoff(run, k)
    metric = metric_key(metric).key
    figures = _figures(store, run, list(dict.fromkeys([metric, *BESIDE])), k)
    strategies = strategy_order({s for s, _ in figures})
    rows = [StrategyHoles(s, label(s), figures[(s, metric)], figures[(s, "judged")].value,
                          figures[(s, "ndcg_judged")], figures[(s, "bpref")].value, figures[(s, "rbp")].value,
                          figures[(s, "rbp_residual")].value)
            for s in strategies if all((s, m) in figures for m in (metric, *BESIDE))]
    judged = [r.judged for r in rows]
    gap = max(judged) - min(judged) if rows else 0.0
    panel = HolesPanel(run.run_id, metric, k, rows, gap, gap_threshold)
    if len(rows) > 1 and gap > gap_threshold:
        panel.warning, panel.reversals = _warning(rows, metric, k)
    return panel


def _warning(rows: list[StrategyHoles], metric: str, k: int) -> tuple[str, list[str]]:
    best_judged = max(rows, key=lambda r: r.judged)
    least_judged = min(rows, key=lambda r: r.judged)
    sign = 1 if higher_is_better(metric) else -1
    leader = max(rows, key=lambda r: sign * r.metric.value)
    text = (f"judged@{k} ranges from {least_judged.judged:.2f} ({least_judged.label}) to "
            f"{best_judged.judged:.2f} ({best_judged.label}): an unjudged result counts as not relevant in "
            f"{metric_label(metric, k)}, so this comparison favours the better-judged {best_judged.label}. "
            f"Judged results only ({metric_label('ndcg_judged', k)}): "
            + ", ".join(f"{r.label} {r.condensed.value:.3f}" for r in rows)
            + f"; bpref@{k}: " + ", ".join(f"{r.label} {r.bpref:.3f}" for r in rows)
            + f". RBP@{k} and how much it could still rise were the holes relevant (its residual): "
            + ", ".join(f"{r.label} {r.rbp:.3f} + {r.residual:.3f}" for r in rows) + ".")
    # A less-judged strategy that leads where unjudged results do not count against it.
    reversals = [s for s in dict.fromkeys(max(rows, key=lambda r, f=f: f(r)).strategy
                                          for f in (lambda r: r.condensed.value, lambda r: r.bpref))
                 if s != leader.strategy and next(r for r in rows if r.strategy == s).judged < leader.judged]
    if reversals:
        names = " and ".join(label(s) for s in reversals)
        text += (f" On the judged results alone {names} leads, not {leader.label}: judge the holes before "
                 f"choosing (`searchgrade judge-pool RUN --pool-depth {k}`, or the Review page's \"fill the "
                 "holes\").")
    return text, reversals


def holes_lines(store: Store, run_id: str, metric: str = "ndcg", k: int | None = None,
                gap_threshold: float = JUDGED_GAP) -> list[str]:
    """The panel as lines for `searchgrade show`: one per strategy, then the warning if any; none
    when every result in every top k is judged."""
    panel = holes_panel(store, run_id, metric, k, gap_threshold)
    if not panel.rows or (panel.warning is None and all(r.judged >= 1.0 for r in panel.rows)):
        return []
    k = panel.k
    head = (f"{'holes @' + str(k):<16}{metric_label(panel.metric, k):>24}{'judged':>9}"
            f"{metric_label('ndcg_judged', k):>30}{'RBP + residual':>18}")
    lines = [head]
    for r in panel.rows:
        lines.append(f"{r.strategy:<16}{r.metric.text():>24}{r.judged:>9.2f}{r.condensed.text():>30}"
                     f"{f'{r.rbp:.3f} + {r.residual:.3f}':>18}")
    if panel.warning:
        lines.append(f"warning: {panel.warning}")
    return lines


# Compare: a change whose sign differs between NDCG and the condensed NDCG.


@dataclass
class FlipRow:
    strategy: str
    label: str
    standard_a: float
    standard_b: float
    condensed_a: float
    condensed_b: float
    judged_a: float
    judged_b: float
    queries: int

    @property
    def standard_change(self) -> float:
        return self.standard_b - self.standard_a

    @property
    def condensed_change(self) -> float:
        return self.condensed_b - self.condensed_a

    @property
    def flipped(self) -> bool:
        s, c = self.standard_change, self.condensed_change
        return abs(s) > TINY and abs(c) > TINY and (s > 0) != (c > 0)


@dataclass
class CompareHoles:
    k: int
    rows: list[FlipRow]

    @property
    def flips(self) -> list[FlipRow]:
        return [r for r in self.rows if r.flipped]

    def sentences(self) -> list[str]:
        """One warning per strategy whose change flips sign between NDCG@k and the condensed NDCG@k."""
        k = self.k
        out = []
        for r in self.flips:
            text = (f"{r.label}: NDCG@{k} changes by {r.standard_change:+.3f} but on judged results only "
                    f"(NDCG, judged only@{k}) by {r.condensed_change:+.3f} (judged@{k} {r.judged_a:.2f} -> "
                    f"{r.judged_b:.2f}): the change is in the judgments as much as in the search.")
            if min(r.judged_a, r.judged_b) < 1.0:
                text += " Judge the holes before reading it as a difference."
            out.append(text)
        return out


def compare_holes(store: Store, run_a: str, run_b: str, k: int) -> CompareHoles:
    """Per strategy of both runs, over the queries both evaluated (paired as Compare pairs them):
    NDCG@k, the condensed NDCG@k and judged@k in A and B."""
    from searchgrade.engine.statistics.pairing import pair_runs

    a, b = store.get_run(run_a), store.get_run(run_b)
    values = {m: pair_runs(store, a, b, m, k) for m in ("ndcg", "ndcg_judged", "judged")}
    rows = []
    for strategy in strategy_order(values["ndcg"].strategies):
        pairs = {m: v.pair(strategy) for m, v in values.items() if strategy in v.strategies}
        if len(pairs) < 3 or not len(pairs["ndcg"][0]):
            continue
        (_, na, nb), (_, ca, cb), (_, ja, jb) = pairs["ndcg"], pairs["ndcg_judged"], pairs["judged"]
        rows.append(FlipRow(strategy, label(strategy), float(na.mean()), float(nb.mean()), float(ca.mean()),
                            float(cb.mean()), float(ja.mean()), float(jb.mean()), len(na)))
    return CompareHoles(k, rows)
