"""The regression gate: is a candidate run significantly worse than a baseline run?

For each strategy both runs evaluated (or those asked for), the metric's per-query values are
paired over the queries both runs share (by query text: generated query ids name different
questions in different runs), and the one procedure of the app (engine/statistics/paired.py,
its margin form) gives the change candidate - baseline with its paired bootstrap interval,
adjusted for the m strategies checked (level 1 - alpha/m), so that checking six strategies does
not give six chances of a false alarm. A strategy fails when that interval lies entirely below
-margin: the candidate is then worse by more than the margin, and its p-value (adjusted the
same way) is below alpha; the gate fails when any strategy does. An interval that reaches above
-margin passes: the change may be noise, or a drop within the margin.

For a metric where lower is better (share not relevant), "worse" means higher: a strategy fails
when the interval lies entirely above +margin.
"""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics import CONDITIONAL, higher_is_better, parse_metric
from searchgrade.engine.run.stored_metrics import per_query_values
from searchgrade.engine.run.strategies import strategy_order
from searchgrade.engine.statistics.paired import PairedDifference, interval_words, margin_tests
from searchgrade.engine.store import RunRecord, Store

#: --baseline value that picks the newest complete run of the candidate's collection.
LATEST_COMPLETE = "latest-complete"
GATE_RESAMPLES = 10_000


@dataclass(frozen=True)
class GateLine:
    strategy: str
    baseline: float
    candidate: float
    #: candidate - baseline, in the metric's own direction (negative: the candidate is lower).
    change: float
    #: The 95% CI of the change adjusted for the strategies checked (level 1 - alpha/m), in the
    #: metric's own direction; NaN when too few queries are shared for any verdict.
    ci_low: float
    ci_high: float
    #: Adjusted p-value that the candidate is worse by more than the margin: < alpha exactly when failed.
    p_value: float
    n: int
    failed: bool
    #: The m strategies checked: what the interval and the p-value are adjusted for.
    comparisons: int = 1


@dataclass
class GateResult:
    baseline: RunRecord
    candidate: RunRecord
    metric: str
    k: int
    margin: float
    alpha: float
    lines: list[GateLine]
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(line.failed for line in self.lines)

    @property
    def metric_label(self) -> str:
        return f"{self.metric}@{self.k}"

    @property
    def rule(self) -> str:
        """When a strategy fails, in words."""
        m = len(self.lines)
        side = "below -margin" if higher_is_better(self.metric) else "above +margin (lower is better)"
        adjusted = f", adjusted for {m} strategies checked," if m > 1 else ""
        return (f"a strategy fails when the {100 * (1 - self.alpha):g}% CI of its change{adjusted} lies "
                f"entirely {side}")

    def describe(self, line: GateLine) -> str:
        """One line: verdict, strategy, the two means, the change with its adjusted CI, the margin
        and what the interval says about it, the p-value and the queries."""
        higher = higher_is_better(self.metric)
        interval = interval_words(PairedDifference(line.change, line.ci_low, line.ci_high, line.p_value,
                                                   line.n, line.comparisons, self.alpha), decimals=4)
        bound = f"{-self.margin if higher else self.margin:+.4f}"
        if line.failed:
            reading = f"the interval lies entirely {'below' if higher else 'above'} {bound}: worse by more than the margin"
        elif line.ci_low != line.ci_low:  # NaN: too few queries for any interval
            reading = "too few queries to show a regression"
        else:
            reading = f"the interval reaches {'above' if higher else 'below'} {bound}: not shown worse by more than the margin"
        return (f"{'FAIL' if line.failed else 'PASS'}  {line.strategy:<16} {self.metric_label}  "
                f"{line.baseline:.4f} -> {line.candidate:.4f}  change {line.change:+.4f} ({interval})  "
                f"margin {self.margin:.4f}: {reading}  p = {line.p_value:.4f}  {line.n} queries")


def resolve_baseline(store: Store, baseline: str, candidate: RunRecord) -> RunRecord:
    """The baseline run: a run id, or ``latest-complete``: the newest complete run of the
    candidate's collection created before it (the candidate itself excluded)."""
    if baseline != LATEST_COMPLETE:
        return store.get_run(baseline)
    earlier = [r for r in store.list_runs(candidate.collection_name)
               if r.status == "complete" and r.run_id != candidate.run_id
               and (r.created_at, r.run_id) < (candidate.created_at, candidate.run_id)]
    if not earlier:
        raise SearchGradeError(f"--baseline latest-complete: no complete run of collection "
                               f"{candidate.collection_name!r} before run {candidate.run_id}; "
                               "evaluate a baseline first or pass a run id")
    return earlier[0]


def _values(store: Store, run: RunRecord, metric: str, k: int) -> pd.DataFrame:
    values = per_query_values(store, run, metric, k)
    texts = pd.DataFrame(store.queries(run.run_id), columns=["query_id", "text", "query_type", "source_doc_id"])
    # Pair by text where the text is unique in the run, else by id and text.
    unique = ~texts["text"].duplicated(keep=False)
    texts["key"] = texts["text"].where(unique, texts["query_id"] + "\x1f" + texts["text"])
    return values.merge(texts[["query_id", "key"]], on="query_id")[["strategy", "key", "value"]]


def run_gate(store: Store, baseline: str, candidate: str, *, metric: str = "ndcg@10",
             strategies: list[str] | None = None, margin: float = 0.01, alpha: float = 0.05) -> GateResult:
    """Gate a candidate run against a baseline (see the module docstring).

    Raises:
        SearchGradeError: a run is missing or not complete, the metric is unknown or beyond a
            run's depth, a strategy is in neither run, the runs share no query, a negative margin
            or an alpha outside (0, 1).
    """
    spec = parse_metric(metric)
    if margin < 0:
        raise SearchGradeError(f"--margin of {margin} is negative: use 0 or a positive number, e.g. 0.01")
    if not 0 < alpha < 1:
        raise SearchGradeError(f"--alpha of {alpha} is not in (0, 1): use e.g. 0.05")
    cand = store.get_run(candidate)
    base = resolve_baseline(store, baseline, cand)
    if base.run_id == cand.run_id:
        raise SearchGradeError(f"baseline and candidate are the same run ({cand.run_id}): pass two runs")
    for role, run in (("baseline", base), ("candidate", cand)):
        if run.status != "complete":
            raise SearchGradeError(f"the {role} run {run.run_id} is {run.status}: gate only complete runs")
    k = spec.resolve_k(cand.k, cand.depth)  # a whole-list metric (bpref): the candidate's depth
    for run in (base, cand):
        if k > run.depth:
            raise SearchGradeError(f"{spec.label or metric}: k of {k} is above run {run.run_id}'s depth "
                                   f"({run.depth}); pick a k both runs kept")
        spec.check_threshold(run.threshold)
        if spec.name in CONDITIONAL and not store.records_sampling(run.run_id):
            raise SearchGradeError(f"{spec.label}: infAP does not apply to run {run.run_id}: its qrels record no "
                                   "sampling (no judgment marked pooled but not judged, a negative grade as "
                                   "trec_eval reads it); gate on bpref or ndcg_judged for unjudged results")
    a = _values(store, base, spec.key, k)
    b = _values(store, cand, spec.key, k)
    shared = strategy_order(set(a["strategy"]) & set(b["strategy"]))
    if strategies:
        missing = [s for s in strategies if s not in shared]
        if missing:
            raise SearchGradeError(f"--strategy {', '.join(missing)} is not in both runs; they share "
                                   f"{', '.join(shared) or 'no strategy'}")
        shared = [s for s in shared if s in strategies]
    if not shared:
        raise SearchGradeError(f"runs {base.run_id} and {cand.run_id} share no strategy: nothing to gate")
    pairs = a.merge(b, on=["strategy", "key"], suffixes=("_base", "_cand")).dropna()
    if pairs.empty:
        raise SearchGradeError(f"runs {base.run_id} and {cand.run_id} share no query (by text): gate runs "
                               "of the same query set (LLM mode: evaluate with --queries-from)")
    notes = []
    if base.collection_name != cand.collection_name:
        notes.append(f"the runs evaluate different collections ({base.collection_name}, {cand.collection_name})")
    sign = 1.0 if higher_is_better(spec.name) else -1.0
    checked = [(strategy, pairs[pairs["strategy"] == strategy]) for strategy in shared]
    checked = [(strategy, pair) for strategy, pair in checked if not pair.empty]
    # In the metric's better direction (larger is better), as the margin form reads them.
    tests = margin_tests([(sign * pair["value_cand"].to_numpy(), sign * pair["value_base"].to_numpy())
                          for _, pair in checked], margin, alpha=alpha, n_resamples=GATE_RESAMPLES, seed=0)
    for strategy in shared:
        n_base = int((a["strategy"] == strategy).sum())
        n_pair = int((pairs["strategy"] == strategy).sum())
        if n_pair < n_base:
            notes.append(f"{strategy}: {n_pair} of the baseline's {n_base} queries are in both runs")
    lines = []
    for (strategy, pair), test in zip(checked, tests, strict=True):
        d = test.difference
        # + 0.0: no "-0.0000" where the metric is turned back to its own direction.
        low, high = sorted((sign * d.ci_low + 0.0, sign * d.ci_high + 0.0)) if d.estimable else (d.ci_low, d.ci_high)
        lines.append(GateLine(strategy, float(pair["value_base"].mean()), float(pair["value_cand"].mean()),
                              sign * d.diff + 0.0, low, high, test.p_value, d.n, test.worse, d.m))
    return GateResult(base, cand, spec.key, k, margin, alpha, lines, notes)


def junit_xml(result: GateResult) -> bytes:
    """The gate as JUnit XML: one test case per strategy, a <failure> where it failed."""
    failures = sum(line.failed for line in result.lines)
    suites = ET.Element("testsuites", name="searchgrade gate", tests=str(len(result.lines)),
                        failures=str(failures), errors="0")
    suite = ET.SubElement(suites, "testsuite", name=f"searchgrade gate {result.metric_label}",
                          tests=str(len(result.lines)), failures=str(failures), errors="0", skipped="0")
    props = ET.SubElement(suite, "properties")
    for name, value in (("baseline", result.baseline.run_id), ("candidate", result.candidate.run_id),
                        ("metric", result.metric_label), ("margin", str(result.margin)),
                        ("alpha", str(result.alpha))):
        ET.SubElement(props, "property", name=name, value=value)
    for line in result.lines:
        case = ET.SubElement(suite, "testcase", classname=f"searchgrade.gate.{result.metric_label}",
                             name=line.strategy, time="0")
        text = result.describe(line)
        if line.failed:
            failure = ET.SubElement(case, "failure", message=f"{line.strategy}: {result.metric_label} "
                                    f"worse than the baseline by more than {result.margin}",
                                    type="regression")
            failure.text = text
        else:
            ET.SubElement(case, "system-out").text = text
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)


def write_junit(result: GateResult, path: str | Path) -> Path:
    """Write the JUnit XML atomically (a half-written report never lands)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(junit_xml(result))
        os.replace(tmp, target)
    except OSError as exc:
        raise SearchGradeError(f"cannot write --junit {target}: {exc.strerror}; pass a writable path") from None
    return target
