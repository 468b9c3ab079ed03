"""The tuner: Optuna's TPE over a space, on the tuning queries only, then the held-out comparison.

``tune`` splits nothing itself: it gets the split (engine/tuning/split.py), made before the first
trial, and grades readable for the tuning queries only (engine/tuning/grades.py), so a trial
cannot read a held-out grade (it would raise). Each fold of the split is tuned by its own seeded
TPE study, within ``trials`` trials and ``time_budget_s`` seconds; every trial is stored as it
ends (``store.add_tuning_trial``), so an interrupted tuning resumes: the stored trials are told
to a new study and only the rest are run.

Then, per fold, the best configuration and the starting one (the run's) answer the held-out
queries, and the comparison is the paired procedure of engine/statistics/paired.py over those
queries (tuned - start), with its resample policy (engine/statistics/pairing.py: 10,000 resamples,
seed 0, the queries in id order): its interval and p-value decide; a gain whose interval includes 0 is
"not significant" and the starting configuration stays the recommendation. Means carry
percentile-bootstrap intervals (engine/statistics/bootstrap.py), latency its median and p95.

With k-fold (few queries), every query is held out once, from a study that never saw its grades;
the configuration recommended is then the one tuned on every query, after the comparison.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics import METRICS, MetricSpec
from searchgrade.engine.statistics.bootstrap import bootstrap_ci
from searchgrade.engine.statistics.paired import interval_words, p_words
from searchgrade.engine.statistics.pairing import differences
from searchgrade.engine.tuning.grades import Grades
from searchgrade.engine.tuning.space import Param, Space
from searchgrade.engine.tuning.split import Split
from searchgrade.engine.tuning.target import Target, TrialLists

#: The fold number of the study tuned on every query (k-fold's recommendation).
ALL_QUERIES = -1


@dataclass(frozen=True)
class TrialRecord:
    """One trial as stored: its parameters and what it scored on the tuning queries."""

    fold: int
    number: int
    params: dict[str, Any]
    value: float
    judged: float
    p95_ms: float
    calls: int
    seconds: float


@dataclass
class Scored:
    """Per-query metric values of one configuration, with judged@k and latency."""

    values: dict[str, float] = field(default_factory=dict)
    judged: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    calls: int = 0

    def mean(self) -> float:
        return float(np.mean(list(self.values.values()))) if self.values else 0.0

    def p95_ms(self) -> float:
        return 1000 * float(np.percentile(list(self.seconds.values()), 95)) if self.seconds else 0.0


def metric_function(spec: MetricSpec) -> Callable[..., float]:
    """The per-query function of a metric the tuner can maximise.

    Raises:
        SearchGradeError: a metric with parameters the tuner does not take (rbp(p=...)).
    """
    if spec.p is not None:
        raise SearchGradeError(f"--metric {spec.label}: the tuner takes metrics without parameters, e.g. ndcg@10")
    return METRICS[spec.name]


def score(lists: TrialLists, query_ids: Sequence[str], grades: Grades, metric: MetricSpec, k: int,
          threshold: int) -> Scored:
    """Each query's metric and judged@k (a failed query scores 0, as an empty list)."""
    fn = metric_function(metric)
    cut = metric.resolve_k(k)
    out = Scored(calls=lists.calls)
    for qid in query_ids:
        known = grades.of(qid)
        ranked = [known.get(d) for d in lists.docs.get(qid, [])]
        pool = list(known.values())
        out.values[qid] = float(fn(ranked, pool, cut, threshold))
        out.judged[qid] = float(METRICS["judged"](ranked, pool, cut, threshold))
        if qid in lists.seconds:
            out.seconds[qid] = lists.seconds[qid]
    return out


def distributions(space: Space) -> dict[str, Any]:
    import optuna

    out: dict[str, Any] = {}
    for p in space.params:
        if p.kind == "choice":
            out[p.name] = optuna.distributions.CategoricalDistribution(list(p.choices))
        elif p.kind == "int":
            out[p.name] = optuna.distributions.IntDistribution(int(p.low), int(p.high))
        else:
            out[p.name] = optuna.distributions.FloatDistribution(float(p.low), float(p.high), step=p.step
                                                                 if p.step and _fits(p) else None)
    return out


def _fits(p: Param) -> bool:
    """A step divides the range (Optuna requires it)."""
    n = (p.high - p.low) / p.step
    return abs(n - round(n)) < 1e-9


def optimise(target: Target, grades: Grades, query_ids: Sequence[str], space: Space, metric: MetricSpec,
             k: int, threshold: int, *, fold: int, trials: int, time_budget_s: float | None, seed: int,
             stored: Sequence[TrialRecord] = (), on_trial: Callable[[TrialRecord], None] | None = None,
             judge: Any = None) -> list[TrialRecord]:
    """Up to ``trials`` trials (stored ones count) of TPE over ``space`` on ``query_ids``."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = distributions(space)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed + fold + 1))
    records = list(stored)
    for r in records:
        study.add_trial(optuna.trial.create_trial(params=r.params, distributions=dists, value=r.value))
    deadline = None if time_budget_s is None else time.monotonic() + time_budget_s
    while len(records) < trials and (deadline is None or time.monotonic() < deadline):
        trial = study.ask(dists)
        start = time.perf_counter()
        lists = target.run(trial.params, query_ids)
        if judge is not None:
            judge.fill(lists, query_ids, grades, heldout=False)
        scored = score(lists, query_ids, grades, metric, k, threshold)
        value = scored.mean()
        study.tell(trial, value)
        record = TrialRecord(fold, len(records), dict(trial.params), value,
                             float(np.mean(list(scored.judged.values()))) if scored.judged else 0.0,
                             scored.p95_ms(), scored.calls, time.perf_counter() - start)
        records.append(record)
        if on_trial is not None:
            on_trial(record)
    return records


def best_of(records: Sequence[TrialRecord]) -> TrialRecord | None:
    """The trial with the highest value (the first of equals)."""
    best = None
    for r in records:
        if best is None or r.value > best.value:
            best = r
    return best


def _interval(values: Sequence[float], seed: int) -> dict[str, float]:
    ci = bootstrap_ci(values, seed=seed)
    return {"value": ci.mean, "ci_low": ci.low, "ci_high": ci.high}


def _latency(seconds: Sequence[float]) -> dict[str, float | None]:
    if not seconds:
        return {"p50_ms": None, "p95_ms": None}
    ms = 1000 * np.asarray(seconds)
    return {"p50_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95))}


def _clean(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def tune(target: Target, grades: Grades, split: Split, space: Space, metric: MetricSpec, *, k: int,
         threshold: int, trials: int, time_budget_s: float | None = None, seed: int = 0,
         stored: Mapping[int, Sequence[TrialRecord]] | None = None,
         on_trial: Callable[[TrialRecord], None] | None = None, judge: Any = None) -> dict[str, Any]:
    """Tune each fold, compare on its held-out queries, and report (see the module).

    Returns:
        The report: ``split``, ``trials`` (count), ``best`` (parameters), ``start``, ``heldout``
        (``metric``, ``start`` / ``tuned`` / ``difference`` with their intervals, latency,
        judged@k, the verdict in words), ``recommendation`` ("tuned" or "start"),
        ``heldout_grade_reads`` (reads of held-out grades during tuning: 0), ``backend_calls``.
    """
    if trials < 1:
        raise SearchGradeError(f"--trials of {trials} must be at least 1")
    stored = stored or {}
    start_values: dict[str, float] = {}
    tuned_values: dict[str, float] = {}
    start_scored, tuned_scored = Scored(), Scored()
    all_records: list[TrialRecord] = []
    heldout_reads = 0
    tuning_calls = heldout_calls = 0
    fold_best: list[dict[str, Any]] = []
    for fold, (tuning_ids, heldout_ids) in enumerate(split.folds):
        before = grades.reads_of(heldout_ids)
        records = optimise(target, grades.only(tuning_ids), tuning_ids, space, metric, k, threshold,
                           fold=fold, trials=trials, time_budget_s=time_budget_s, seed=seed,
                           stored=stored.get(fold, ()), on_trial=on_trial, judge=judge)
        heldout_reads += grades.reads_of(heldout_ids) - before
        tuning_calls += sum(r.calls for r in records[len(stored.get(fold, ())):])
        all_records += records
        best = best_of(records)
        params = best.params if best is not None else dict(target.start)
        fold_best.append(params)
        held = grades.only(heldout_ids)
        sides = [(target.run(params_of, heldout_ids), scored_into, values)
                 for params_of, scored_into, values in ((target.start, start_scored, start_values),
                                                        (params, tuned_scored, tuned_values))]
        if judge is not None:  # every pair the comparison shows, whatever the budget; both sides
            for lists, _, _ in sides:  # are then scored against the same grades
                judge.fill(lists, heldout_ids, held, heldout=True)
        for lists, scored_into, values in sides:
            scored = score(lists, heldout_ids, held, metric, k, threshold)
            heldout_calls += scored.calls
            values.update(scored.values)
            scored_into.judged.update(scored.judged)
            scored_into.seconds.update(scored.seconds)
    order = sorted(start_values)
    a = [tuned_values[q] for q in order]
    b = [start_values[q] for q in order]
    # The one resample policy of every comparison (engine/statistics/pairing.py): 10,000 resamples,
    # seed 0, whatever --seed (which seeds the split and the sampler), over the queries in id order.
    [diff] = differences([(a, b)])
    if split.method == "k-fold":
        records = optimise(target, grades, split.tuning, space, metric, k, threshold, fold=ALL_QUERIES,
                           trials=trials, time_budget_s=time_budget_s, seed=seed,
                           stored=stored.get(ALL_QUERIES, ()), on_trial=on_trial, judge=judge)
        tuning_calls += sum(r.calls for r in records[len(stored.get(ALL_QUERIES, ())):])
        all_records += records
        final = best_of(records)
        best_params = final.params if final is not None else dict(target.start)
    else:
        best_params = fold_best[0]
    gain = diff.diff > 0 and diff.significant
    label = metric.label
    if not diff.estimable:
        verdict = (f"{len(order)} held-out queries are too few for a verdict ({interval_words(diff)}): the "
                   "starting configuration stays the recommendation")
    elif gain:
        verdict = (f"the tuned configuration's held-out {label} is {diff.diff:+.4f} against the start "
                   f"({interval_words(diff, 4)}, {p_words(diff.p_value)}): significant; use the tuned configuration")
    else:
        verdict = (f"the tuned configuration's held-out {label} is {diff.diff:+.4f} against the start "
                   f"({interval_words(diff, 4)}, {p_words(diff.p_value)}): not significant; the starting "
                   "configuration stays the recommendation")
    return {
        "strategy": target.strategy,
        "metric": label,
        "split": split.to_json(),
        "trials": len(all_records),
        "best": target.describe(best_params),
        "start": target.describe(target.start),
        "fold_best": [target.describe(p) for p in fold_best] if split.method == "k-fold" else None,
        "heldout": {
            "metric": label,
            "queries": len(order),
            "start": _interval(b, seed),
            "tuned": _interval(a, seed),
            "difference": {"value": diff.diff, "ci_low": _clean(diff.ci_low), "ci_high": _clean(diff.ci_high),
                           "p": diff.p_value},
            "significant": bool(gain),
            "verdict": verdict,
            "latency": {"start": _latency(list(start_scored.seconds.values())),
                        "tuned": _latency(list(tuned_scored.seconds.values()))},
            "judged": {"start": float(np.mean(list(start_scored.judged.values()))),
                       "tuned": float(np.mean(list(tuned_scored.judged.values())))},
        },
        "recommendation": "tuned" if gain else "start",
        "heldout_grade_reads": heldout_reads,
        "backend_calls": {"tuning": tuning_calls, "heldout": heldout_calls,
                          "total": tuning_calls + heldout_calls},
        "trial_list": [asdict(r) for r in all_records],
        "judge": judge.report() if judge is not None else None,
    }
