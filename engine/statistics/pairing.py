"""The one way to compare two runs: which queries pair, in which order, with how many resamples,
what is checked first, and when a change is a drop or a gain.

Compare (viewmodels/compare.py), the regression gate (engine/gate.py), a suite's regression and
its alert (engine/suites/regression.py) and MCP's compare_runs all call :func:`compare_runs`, so
the same two runs give the same interval and verdict on every surface, for the same strategies
checked. The comparisons within one run (Results' best strategy against the others, each reranked
twin: viewmodels/significance.py) and the tuner's held-out comparison (engine/tuning/tuner.py) use
:func:`differences`, the same procedure and resample policy.

**The pairing rule.** Two runs' queries are the same query when they have the same id, if both
runs evaluated a collection's own queries (mode ``qrels``: ids come from the collection and keep
their meaning); otherwise (generated queries, a query set sampled from a log) when they have the
same text, because ``g-<doc>-n1`` names whatever question the model wrote, a different one when
the model, the prompt or the sample changed (``pairing_key``). A text that appears twice in one
run cannot be paired and is left out, with a note. A strategy's query pairs only where both runs
have a value for it (a query a strategy failed on has none).

**The order.** The pairs are put in run A's (the baseline's, "before") query id order, whoever
asks: the bootstrap draws resample positions, so the same values in another order would give
another interval.

**The resample policy.** ``RESAMPLES`` (10,000) paired resamples with seed ``SEED`` (0), raised
only where a family needs more for its interval's ends (engine/statistics/paired.py,
``resamples_for``), everywhere. A family is the strategies compared: m of them, each interval at
level 1 - alpha/m, and every surface says how many comparisons that is.

**The checks** (``check_metric``), before anything is read: the metric must be a quality metric
(no verdict is made on a diagnostic: judged@k, the RBP residual), apply to both runs' labels (no
"highly relevant" share on binary labels), apply to both runs' qrels (infAP needs sampled ones),
its ``rel=`` be the runs' threshold, both runs count a result relevant at the same grade when the
metric reads the threshold, and k be within both runs' depth.

**The verdict** of a strategy's change, after - before in the metric's own direction, with the
family's adjusted interval (``Change``): a **drop** when the change is significantly worse (the
interval lies entirely on the worse side of 0: below it, or above it where lower is better) and
the estimated change is worse than ``margin``; a **gain** likewise on the better side. So the
interval and the verdict agree, noise (an interval that reaches 0) never fails a build, and a
significant change smaller than the margin is said but not alarmed on; ``margin = 0`` makes
every significant drop a drop. The gate fails on a drop; a suite alerts on one.

A later kind of evidence (clicks, issue 36) plugs in here: it pairs by the same rule, adds its
own conditions to ``check_metric`` and reads its verdict from ``Change``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.statistics.holes import HoleVerdict, Sides, reading
from searchgrade.engine.statistics.paired import ALPHA, PairedDifference, paired_differences

if TYPE_CHECKING:
    from searchgrade.engine.metrics import MetricSpec
    from searchgrade.engine.run.condensed import RunLabels
    from searchgrade.engine.store import RunRecord, Store

#: Paired resamples on every surface (raised for a family that needs more), and their seed.
RESAMPLES = 10_000
SEED = 0


def differences(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], *, m: int | None = None,
                alpha: float = ALPHA) -> list[PairedDifference]:
    """``paired_differences`` with the one resample policy (RESAMPLES, SEED): every comparison
    the app shows goes through here or ``compare_runs``."""
    return paired_differences(pairs, m=m, alpha=alpha, n_resamples=RESAMPLES, seed=SEED)


def pairing_key(a: RunRecord, b: RunRecord) -> str:
    """ "query_id" when both runs evaluated a collection's own queries (mode qrels), else "text"."""
    return "query_id" if a.mode == "qrels" and b.mode == "qrels" else "text"


def pairing_words(paired_on: str) -> str:
    """How queries were paired, as every surface says it."""
    return ("queries paired by their id (the collection's own queries)" if paired_on == "query_id" else
            "queries paired by their text (generated or logged queries: an id names different questions "
            "in different runs)")


def check_metric(store: Store, runs: Sequence[RunRecord], metric: str, k: int | None = None,
                 where: str = "metric") -> tuple[MetricSpec, int]:
    """The parsed metric and the cut-off to compare ``runs`` at (k, or the metric's own, or the
    last run's k; a whole-list metric's: its depth), after the checks of the module.

    Raises:
        SearchGradeError: one line naming the check that failed and the fix.
    """
    from searchgrade.engine.metrics import check_quality, metric_record, parse_metric

    spec = parse_metric(metric)
    record = check_quality(spec.key, where)
    last = runs[-1]
    k = k if k is not None else spec.resolve_k(last.k, last.depth)
    for run in runs:
        if k > run.depth:
            raise SearchGradeError(f"{where} {spec.label or metric}: k of {k} is above run {run.run_id}'s depth "
                                   f"({run.depth}); pick a k both runs kept")
        spec.check_threshold(run.threshold)
        if record.needs_sampling and not store.records_sampling(run.run_id):
            raise SearchGradeError(
                f"{where} {spec.label}: {record.label} does not apply to run {run.run_id}: its qrels record no "
                "sampling (no judgment marked pooled but not judged, a negative grade as trec_eval reads "
                "it); compare on bpref or ndcg_judged for unjudged results")
        if not record.applies(run.grade_max, sampled=True, generated=run.mode == "llm"):
            scale = "binary labels" if (run.grade_max or 0) <= 1 else f"labels 0-{run.grade_max}"
            raise SearchGradeError(f"{where} {spec.label}: {metric_record(spec.key).label} does not apply to run "
                                   f"{run.run_id}, graded with {scale}; pick a metric its labels support, "
                                   "e.g. ndcg@10")
    thresholds = {run.threshold for run in runs}
    if record.thresholded and len(thresholds) > 1:
        raise SearchGradeError(
            f"{where} {spec.label}: the runs count a result relevant at different grades ("
            + ", ".join(f"run {run.run_id}: >= {run.threshold}" for run in runs)
            + "), so their values are not comparable; compare DCG or NDCG (grades as gains), or evaluate "
            "again with the same --threshold")
    return spec, k


@dataclass
class PairedRuns:
    """One metric of runs A and B over the queries both evaluated: rows are the shared queries in
    run A's id order, columns the strategies both ran (by name), NaN where a run has no value."""

    strategies: list[str]
    query_ids: np.ndarray
    texts: np.ndarray
    a: np.ndarray
    b: np.ndarray
    paired_on: str
    notes: list[str]
    #: Why nothing could be compared (no shared query, no shared strategy), with the fix; else None.
    refusal: str | None
    #: The queries both runs hold (paired by ``paired_on``), whatever the strategies.
    shared: int = 0
    #: Run B's id of each shared query (its own id when paired on the text; None: A's).
    query_ids_b: np.ndarray | None = None

    def pair(self, strategy: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One strategy's shared queries with a value in both runs: (row indices, A's, B's)."""
        j = self.strategies.index(strategy)
        rows = np.flatnonzero(~(np.isnan(self.a[:, j]) | np.isnan(self.b[:, j])))
        return rows, self.a[rows, j], self.b[rows, j]


def pair_runs(store: Store, a: RunRecord, b: RunRecord, metric: str, k: int) -> PairedRuns:
    """Metric ``metric`` (a key) at k of runs A and B per strategy, paired by the rule of the module."""
    from searchgrade.engine.run.stored_metrics import wide_values

    on = pairing_key(a, b)
    queries_a, queries_b = store.query_table(a.run_id), store.query_table(b.run_id)
    notes = []
    if on == "text":
        repeated = int(queries_a["repeated"].sum() + queries_b["repeated"].sum())
        if repeated:
            notes.append(f"{repeated} {'query is' if repeated == 1 else 'queries are'} left out: the same text "
                         "appears twice in one run, so it cannot be paired.")
        queries_a, queries_b = queries_a[~queries_a["repeated"]], queries_b[~queries_b["repeated"]]
    shared = queries_a[["query_id", "text"]].merge(queries_b[["query_id", "text"]], on=on, suffixes=("", "_b"))
    if on == "query_id":
        shared["query_id_b"] = shared["query_id"]
    shared = shared.sort_values("query_id", kind="stable")
    empty = np.empty((0, 0))
    none = np.array([], dtype=object)
    if shared.empty:
        return PairedRuns([], none, none, empty, empty, on, notes, _no_shared_query(a, b, on, queries_a, queries_b))
    wide_a = wide_values(store, a, metric, k).reindex(shared["query_id"])
    wide_b = wide_values(store, b, metric, k).reindex(shared["query_id_b"])
    strategies = sorted(set(wide_a.columns) & set(wide_b.columns))
    if not strategies:
        from searchgrade.engine.run.strategies import label

        refusal = (f"These runs have no strategy in common (run A: {', '.join(map(label, wide_a.columns))}; "
                   f"run B: {', '.join(map(label, wide_b.columns))}): nothing to compare.")
        return PairedRuns([], none, none, empty, empty, on, notes, refusal, len(shared))
    return PairedRuns(strategies, shared["query_id"].to_numpy(dtype=object), shared["text"].to_numpy(dtype=object),
                      wide_a[strategies].to_numpy(dtype=float), wide_b[strategies].to_numpy(dtype=float), on,
                      notes, None, len(shared), shared["query_id_b"].to_numpy(dtype=object))


def _no_shared_query(a: RunRecord, b: RunRecord, on: str, queries_a: object, queries_b: object) -> str:
    counts = f"run A has {len(queries_a):,} queries, run B {len(queries_b):,}"  # type: ignore[arg-type]
    if on == "text":
        return (f"These runs share no query text ({counts}): generated queries differ whenever the "
                "model, the prompt or the document sample changes, so there is nothing to pair. "
                f"Evaluate the new configuration on run A's questions: `searchgrade evaluate "
                f"{a.collection_name} --llm --queries-from {a.run_id}` (on the Evaluate page: "
                "reuse the queries of run A), then compare that run with A.")
    return (f"These runs share no query id ({counts}): a paired comparison needs the same queries. "
            "Compare runs of the same collection and query set (the same --max-queries sample).")


@dataclass(frozen=True)
class Change:
    """One strategy's change from run A (before) to run B (after), in the metric's own direction."""

    strategy: str
    #: The means over the paired queries.
    before: float
    after: float
    #: after - before with its interval adjusted for the family (m strategies), its adjusted
    #: p-value, the queries paired and m: what every surface shows.
    difference: PairedDifference
    higher_is_better: bool
    margin: float = 0.0
    #: Computed on condensed lists (engine/statistics/holes.py): ``before``/``after`` are their means.
    condensed: bool = False
    #: Why the holes withhold a verdict (then the difference has no interval and is never
    #: significant, a drop or a gain); None when compared.
    withheld: str | None = None

    @property
    def significant(self) -> bool:
        return self.difference.significant

    @property
    def worse(self) -> bool:
        """The interval lies entirely on the worse side of 0."""
        d = self.difference
        return bool(d.ci_high < 0) if self.higher_is_better else bool(d.ci_low > 0)

    @property
    def better(self) -> bool:
        """The interval lies entirely on the better side of 0."""
        d = self.difference
        return bool(d.ci_low > 0) if self.higher_is_better else bool(d.ci_high < 0)

    @property
    def drop(self) -> bool:
        """Significantly worse, and worse by more than the margin: what fails the gate and alerts."""
        return self.worse and abs(self.difference.diff) > self.margin

    @property
    def gain(self) -> bool:
        """Significantly better, by more than the margin."""
        return self.better and abs(self.difference.diff) > self.margin

    @property
    def verdict(self) -> str | None:
        """ "drop", "gain", or None (noise, or a significant change within the margin)."""
        return "drop" if self.drop else "gain" if self.gain else None

    @property
    def reading(self) -> str:
        """The verdict in words, with the margin it was read against."""
        d = self.difference
        if self.withheld is not None:
            return f"no verdict: {self.withheld}"
        if not d.estimable:
            return "too few queries for a verdict"
        side = "worse" if self.worse else "better"
        if not d.significant:
            return "not distinguishable from no change (the interval reaches 0)"
        if self.verdict is None:
            return f"significantly {side}, by {abs(d.diff):.4f}: within the margin of {self.margin:g}"
        return f"significantly {side}, by {abs(d.diff):.4f}: more than the margin of {self.margin:g}"


@dataclass
class RunsComparison:
    """Run B against run A on one metric: the pairs, and one ``Change`` per strategy of the family."""

    before: RunRecord
    after: RunRecord
    spec: MetricSpec
    k: int
    paired: PairedRuns
    changes: list[Change] = field(default_factory=list)
    alpha: float = ALPHA

    @property
    def metric(self) -> str:
        return self.spec.key

    @property
    def label(self) -> str:
        """ "ndcg@10"."""
        return f"{self.spec.key}@{self.k}"

    @property
    def comparisons(self) -> int:
        """The m strategies compared (a change the holes withhold is no comparison): what every
        interval is adjusted for."""
        return sum(1 for c in self.changes if c.withheld is None)


def compare_runs(store: Store, before: str | RunRecord, after: str | RunRecord, metric: str, *,
                 k: int | None = None, strategies: Sequence[str] | None = None, margin: float = 0.0,
                 alpha: float = ALPHA, where: str = "metric") -> RunsComparison:
    """Run B (``after``) against run A (``before``) on ``metric`` (see the module): the family is
    ``strategies`` (each must be in both runs), else every strategy both runs have a paired query
    for; each change with its interval adjusted for that family.

    Raises:
        SearchGradeError: a check of ``check_metric`` failed, a strategy asked for is not in both
            runs, or a margin that is negative.
    """
    from searchgrade.engine.metrics import higher_is_better
    from searchgrade.engine.run.strategies import strategy_order

    a = before if not isinstance(before, str) else store.get_run(before)
    b = after if not isinstance(after, str) else store.get_run(after)
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin >= 0):
        raise SearchGradeError(f"margin of {margin} is negative: use 0 or a positive number, e.g. 0.01")
    spec, k = check_metric(store, [a, b], metric, k, where)
    paired = pair_runs(store, a, b, spec.key, k)
    result = RunsComparison(a, b, spec, k, paired, alpha=alpha)
    if paired.refusal is not None:
        return result
    pairs = {s: paired.pair(s) for s in paired.strategies}
    family = strategy_order([s for s in pairs if len(pairs[s][0])])
    if strategies:
        missing = [s for s in strategies if s not in paired.strategies]
        if missing:
            raise SearchGradeError(f"--strategy {', '.join(missing)} is not in both runs; they share "
                                   f"{', '.join(strategy_order(paired.strategies)) or 'no strategy'}")
        family = [s for s in family if s in strategies]
    higher = higher_is_better(spec.key)
    # The rule for judgments with holes (engine/statistics/holes.py): as always, on condensed lists,
    # or withheld; None where the runs' gradings count an absent result as not relevant by design.
    found = _run_changes(store, a, b, spec.key, k, paired, pairs, family, alpha) if family else None
    if found is None:
        tests = differences([(pairs[s][2], pairs[s][1]) for s in family], alpha=alpha) if family else []
        result.changes = [Change(s, float(pairs[s][1].mean()), float(pairs[s][2].mean()), d, higher, float(margin))
                          for s, d in zip(family, tests, strict=True)]
        return result
    tested = sum(1 for v in found if v.difference is not None)
    for s, v in zip(family, found, strict=True):
        if v.difference is None:  # withheld: the plain means and difference, no interval, never a verdict
            before, after = float(pairs[s][1].mean()), float(pairs[s][2].mean())
            d = PairedDifference(after - before, math.nan, math.nan, 1.0, len(pairs[s][0]), max(tested, 1), alpha)
            result.changes.append(Change(s, before, after, d, higher, float(margin), withheld=v.withheld))
        else:
            result.changes.append(Change(s, v.mean_b, v.mean_a, v.difference, higher, float(margin),
                                         condensed=v.condensed))
    return result


# The rule for judgments with holes (engine/statistics/holes.py), applied by the one procedure.


def compare_with_holes(sides: Sequence[Sides], reasons: Sequence[Callable[[float, float], str]], *,
                       keys: Sequence[Hashable] | None = None, m: int | None = None,
                       alpha: float = ALPHA) -> list[HoleVerdict]:
    """Each comparison by the rule (engine/statistics/holes.py), the ones made tested as one family
    with the one resample policy; ``reasons[i](J_a, J_b)`` words comparison i's withholding. m: the
    family size (default: the distinct ``keys`` of the comparisons not withheld, a pair and its
    reverse sharing one key; without keys, each comparison is one)."""
    readings, columns, index, shares, means = [], [], [], [], []
    for i, s in enumerate(sides):
        ja = float(np.mean(s.judged_a)) if len(s.judged_a) else 0.0
        jb = float(np.mean(s.judged_b)) if len(s.judged_b) else 0.0
        shares.append((ja, jb))
        how = reading(ja, jb)
        a, b = s.condensed() if how == "condensed" else (s.a, s.b)
        if how == "condensed" and not len(a):
            how = "withheld"
        readings.append(how)
        if how != "withheld":
            columns.append((a, b))
            index.append(i)
            means.append((float(np.mean(a)), float(np.mean(b))))
    family = m if m is not None else (len({keys[i] for i in index}) if keys is not None else len(columns))
    tested = dict(zip(index, differences(columns, m=max(family, 1), alpha=alpha) if columns else [], strict=True))
    mean_of = dict(zip(index, means, strict=True))
    return [HoleVerdict(None, False, reasons[i](ja, jb), ja, jb) if how == "withheld"
            else HoleVerdict(tested[i], how == "condensed", None, ja, jb, *mean_of[i])
            for i, (how, (ja, jb)) in enumerate(zip(readings, shares, strict=True))]


@dataclass(frozen=True)
class Item:
    """One comparison for ``holes_verdicts``: side a (strategy_a of run a) against side b, over query
    pairs (a's id, b's id), with each side's metric per query pair (holes as not relevant)."""

    strategy_a: str
    strategy_b: str
    queries: Sequence[tuple[str, str]]
    a: np.ndarray
    b: np.ndarray


def holes_verdicts(labels_a: RunLabels, labels_b: RunLabels, items: Sequence[Item], metric: str, *,
                   keys: Sequence[Hashable], reasons: Sequence[Callable[[float, float], str]],
                   alpha: float = ALPHA) -> list[HoleVerdict] | None:
    """Each comparison by the rule, a strategy of run a against one of run b (the same run twice
    within a run), judged shares and condensed lists read from the runs' graded lists
    (engine/run/condensed.py); None when neither run's grading judges what it saw."""
    from searchgrade.engine.run.condensed import condensed_values

    if not (labels_a.rule_applies or labels_b.rule_applies):
        return None
    sides = []
    for item in items:
        ja = np.array([labels_a.judged(item.strategy_a, qa) for qa, _ in item.queries])
        jb = np.array([labels_b.judged(item.strategy_b, qb) for _, qb in item.queries])
        sides.append(Sides(item.a, item.b, ja, jb, lambda item=item: condensed_values(
            labels_a, item.strategy_a, labels_b, item.strategy_b, item.queries, metric)))
    return compare_with_holes(sides, reasons, keys=keys, alpha=alpha)


def _run_changes(store: Store, a: RunRecord, b: RunRecord, metric: str, k: int, paired: PairedRuns,
                 pairs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], family: Sequence[str],
                 alpha: float) -> list[HoleVerdict] | None:
    """Each strategy's change from run A to run B by the rule: side a is run B (after), side b run A
    (before), over the paired queries; None where the rule does not apply (the runs' gradings, or a
    metric that reads holes itself)."""
    from searchgrade.engine.run.condensed import RunLabels, rule_applies
    from searchgrade.engine.run.strategies import label
    from searchgrade.engine.statistics.holes import rule_metric, withheld_reason

    # Checked before the lists and grades are read: for most runs (qrels, ...) the rule does not apply.
    if not rule_metric(metric) or not (rule_applies(store, a) or rule_applies(store, b)):
        return None
    after, before = RunLabels(store, b, k), RunLabels(store, a, k)
    ids_b = paired.query_ids_b if paired.query_ids_b is not None else paired.query_ids
    items = [Item(s, s, [(ids_b[r], paired.query_ids[r]) for r in pairs[s][0]], pairs[s][2], pairs[s][1])
             for s in family]
    reasons = [lambda j_b, j_a, s=s: withheld_reason(f"{label(s)} in run B", f"{label(s)} in run A", j_b, j_a, k)
               for s in family]
    return holes_verdicts(after, before, items, metric, keys=list(family), reasons=reasons, alpha=alpha)
