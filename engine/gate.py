"""The regression gate: is a candidate run significantly worse than a baseline run?

For each strategy both runs evaluated (or those asked for), the metric's per-query values are
paired and compared by the one way of the app (engine/statistics/pairing.py: its pairing rule,
order, resample policy and checks): the change candidate - baseline with its paired bootstrap
interval, adjusted for the m strategies checked (level 1 - alpha/m), so that checking six
strategies does not give six chances of a false alarm.

**A strategy fails when its change is significantly worse and the drop is larger than the
margin**: the interval shown lies entirely below 0 (significant: its adjusted p-value is below
alpha), and the estimated change is below -margin (default 0.01; ``--margin 0`` fails every
significant drop). So the verdict is the interval's, noise (an interval that reaches 0) never fails
a build, and a significant drop smaller than the margin passes, said as such. The gate fails when
any strategy does. For a metric where lower is better (share not relevant), worse means higher:
the interval lies entirely above 0 and the change is above +margin.

Until issue 32 a strategy failed only when the whole interval lay below -margin: a significant
4.5% drop of BM25 with broken parameters (an interval of -0.050 to -0.008 at a margin of 0.01)
passed. The rule now fails it.
"""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics import higher_is_better
from searchgrade.engine.statistics.paired import interval_words
from searchgrade.engine.statistics.pairing import Change, compare_runs, pairing_words
from searchgrade.engine.store import RunRecord, Store

#: --baseline value that picks the newest complete run of the candidate's collection.
LATEST_COMPLETE = "latest-complete"


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
    #: Adjusted p-value of the change (below alpha exactly when the interval excludes 0).
    p_value: float
    n: int
    failed: bool
    #: The m strategies checked: what the interval and the p-value are adjusted for.
    comparisons: int = 1
    #: The verdict in words, with the margin it was read against (pairing.Change.reading).
    reading: str = ""


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
        adjusted = f", adjusted for {m} strategies checked," if m > 1 else ""
        side, move = ("below 0", "drop") if higher_is_better(self.metric) else \
            ("above 0 (lower is better)", "rise")
        return (f"a strategy fails when the {100 * (1 - self.alpha):g}% CI of its change{adjusted} lies entirely "
                f"{side} and the {move} is larger than the margin ({self.margin:g})")

    def describe(self, line: GateLine) -> str:
        """One line: verdict, strategy, the two means, the change with its adjusted CI, the margin
        and what the interval says about it, the p-value and the queries."""
        from searchgrade.engine.statistics.paired import PairedDifference

        interval = interval_words(PairedDifference(line.change, line.ci_low, line.ci_high, line.p_value,
                                                   line.n, line.comparisons, self.alpha), decimals=4)
        return (f"{'FAIL' if line.failed else 'PASS'}  {line.strategy:<16} {self.metric_label}  "
                f"{line.baseline:.4f} -> {line.candidate:.4f}  change {line.change:+.4f} ({interval})  "
                f"margin {self.margin:.4f}: {line.reading}  p = {line.p_value:.4f}  {line.n} queries")


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


def _line(change: Change) -> GateLine:
    d = change.difference
    return GateLine(change.strategy, change.before, change.after, d.diff + 0.0, d.ci_low, d.ci_high, d.p_value, d.n,
                    change.drop, d.m, change.reading)


def run_gate(store: Store, baseline: str, candidate: str, *, metric: str = "ndcg@10",
             strategies: list[str] | None = None, margin: float = 0.01, alpha: float = 0.05) -> GateResult:
    """Gate a candidate run against a baseline (see the module).

    Raises:
        SearchGradeError: a run is missing or not complete, the metric is unknown, a diagnostic,
            beyond a run's depth or not for its labels, a strategy is in neither run, the runs
            share no query, a negative margin or an alpha outside (0, 1).
    """
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
    result = compare_runs(store, base, cand, metric, strategies=strategies, margin=margin, alpha=alpha,
                          where="--metric")
    paired = result.paired
    if paired.refusal is not None:
        if paired.shared:
            raise SearchGradeError(f"runs {base.run_id} and {cand.run_id} share no strategy: nothing to gate")
        raise SearchGradeError(f"runs {base.run_id} and {cand.run_id} share no query ({pairing_words(paired.paired_on)}"
                               "): gate runs of the same query set (LLM mode: evaluate with --queries-from)")
    if not result.changes:
        raise SearchGradeError(f"runs {base.run_id} and {cand.run_id} share no query with a value for "
                               f"{', '.join(strategies or paired.strategies)}: nothing to gate")
    notes = [pairing_words(paired.paired_on).capitalize(), *paired.notes]
    if base.collection_name != cand.collection_name:
        notes.append(f"the runs evaluate different collections ({base.collection_name}, {cand.collection_name})")
    n_base = store.query_count(base.run_id)
    for change in result.changes:
        if change.difference.n < n_base:
            notes.append(f"{change.strategy}: {change.difference.n} of the baseline's {n_base} queries are in both runs")
    return GateResult(base, cand, result.metric, result.k, margin, alpha, [_line(c) for c in result.changes], notes)


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
