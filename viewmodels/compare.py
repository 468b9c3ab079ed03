"""The Compare screen: run B against run A per strategy, paired over the queries both evaluated.

The pairing, its order, the resample policy, the checks and the verdict are the one way of the
app (engine/statistics/pairing.py), which the gate, suites and MCP use too: a collection's own
queries (qrels mode) pair by id, generated or logged queries by their text; runs that share no
question are refused with the way to get a comparable run (``--queries-from``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from searchgrade.engine.metrics import higher_is_better
from searchgrade.engine.run.settings_words import settings_diff as words_diff
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.statistics.pairing import Change
from searchgrade.engine.statistics.pairing import compare_runs as compare
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import (
    PRIMARY_K,
    PRIMARY_METRIC,
    Sentence,
    one_session,
)
from searchgrade.viewmodels.significance import family_note, figures_text, verdict

DELTA_COLUMNS = ["Strategy", "strategy", "Run A", "Run B", "Change", "CI low", "CI high", "p-value",
                 "Comparisons", "Verdict", "Queries"]
CHANGED_COLUMNS = ["Strategy", "Query id", "Query", "Run A", "Run B", "Change"]
SETTINGS_COLUMNS = ["Setting", "Run A", "Run B"]
#: The least half-range of the change chart: this share of the larger mean either run reached, and
#: never below MIN_HALF_RANGE, so that a change of a few thousandths is a small bar, not a dominant one.
RELATIVE_HALF_RANGE = 0.05
MIN_HALF_RANGE = 0.02
#: Settings of a run's record that say how it was made (the config's keys are added to these).
RUN_SETTINGS = ("collection_name", "mode", "label_source", "threshold", "k", "depth", "grade_min", "grade_max")


def symmetric_range(deltas: pd.DataFrame) -> tuple[float, float]:
    """(-h, h): h the largest |change| or |interval end| times 1.15, at least RELATIVE_HALF_RANGE of
    the larger mean either run reached and at least MIN_HALF_RANGE."""
    if deltas.empty:
        return (-MIN_HALF_RANGE, MIN_HALF_RANGE)
    reach = pd.concat([deltas["Change"], deltas["CI low"], deltas["CI high"]]).abs().max(skipna=True)
    scale = pd.concat([deltas["Run A"], deltas["Run B"]]).abs().max(skipna=True)
    half = max(1.15 * (0.0 if pd.isna(reach) else float(reach)),
               RELATIVE_HALF_RANGE * (0.0 if pd.isna(scale) else float(scale)), MIN_HALF_RANGE)
    return (-half, half)


def settings_diff(a: RunRecord, b: RunRecord) -> pd.DataFrame:
    """The settings that differ between two runs (the run record's and its configuration's), in
    the words every page uses for them (engine/run/settings_words.py): Setting, Run A, Run B."""
    def settings(run: RunRecord) -> dict[str, object]:
        return {**{name: getattr(run, name) for name in RUN_SETTINGS}, **(run.config or {})}

    rows = [{"Setting": c.name, "Run A": c.before, "Run B": c.after} for c in words_diff(settings(a), settings(b))]
    return pd.DataFrame(rows, columns=SETTINGS_COLUMNS)


def default_pair(runs: list[tuple[str, str]]) -> tuple[str, str]:
    """The pair Compare opens on, from (run id, collection) newest first: the newest run as B and
    the newest older run of its collection as A (the next run when it has none)."""
    newest, collection = runs[0]
    same = [r for r, c in runs[1:] if c == collection]
    return (same[0] if same else runs[1][0]), newest


@dataclass
class RunComparison:
    run_a: RunRecord
    run_b: RunRecord
    metric: str
    k: int
    n_shared: int
    #: Strategy, strategy, Run A, Run B, Change (B - A), CI low, CI high (its 95% CI adjusted for
    #: the m strategies compared), p-value (adjusted the same way), Comparisons (m), Verdict
    #: ("significant" exactly when the interval excludes 0), Queries
    deltas: pd.DataFrame
    #: strategy label, query id, text, Run A, Run B, Change (largest |change| first)
    changed: pd.DataFrame
    notes: list[str]
    #: "query_id" or "text": what made two queries the same.
    paired_on: str = "query_id"
    #: Why nothing could be compared (no shared query), with what to do; None when compared.
    refusal: str | None = None
    #: One sentence per strategy compared, in the deltas' order: the change, its adjusted interval
    #: and p-value, and the verdict (kind "good"/"warn" for a real change, "info" otherwise).
    findings: list[Sentence] = field(default_factory=list)
    #: What "significant" means over these m comparisons, in words ("" when none was made).
    statistics_note: str = ""
    #: Strategies with results in one run only (labels): not compared, listed so none vanishes.
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    #: The settings that differ between the two runs: Setting, Run A, Run B (``settings_diff``).
    settings: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SETTINGS_COLUMNS))

    @property
    def axis_range(self) -> tuple[float, float]:
        """The change chart's y range: symmetric around 0, wide enough for every change and its
        interval, and never narrower than ``min_change_range`` (a -0.002 change is drawn small)."""
        return symmetric_range(self.deltas)


@one_session
def compare_runs(store: Store, run_a: str, run_b: str, metric: str = PRIMARY_METRIC,
                 k: int = PRIMARY_K, n_changed: int = 20) -> RunComparison:
    """Run B against run A per strategy, paired over the queries both evaluated: one family of m
    comparisons (one per strategy), each with its 95% CI adjusted for m
    (engine/statistics/pairing.py, as the gate and suites compare)."""
    a, b = store.get_run(run_a), store.get_run(run_b)
    result = compare(store, a, b, metric, k=k)
    paired = result.paired
    notes = []
    if a.collection_name != b.collection_name:
        notes.append(f"The runs evaluate different collections ({a.collection_name}, "
                     f"{b.collection_name}): only queries with the same "
                     f"{'id' if paired.paired_on == 'query_id' else 'text'} are paired.")
    notes += paired.notes
    ran_a, ran_b = set(store.result_strategies(a.run_id)), set(store.result_strategies(b.run_id))
    one_sided = {"only_in_a": [label(s) for s in strategy_order(ran_a - ran_b)],
                 "only_in_b": [label(s) for s in strategy_order(ran_b - ran_a)],
                 "settings": settings_diff(a, b)}
    if paired.refusal is not None:
        return RunComparison(a, b, metric, k, 0, pd.DataFrame(columns=DELTA_COLUMNS),
                             pd.DataFrame(columns=CHANGED_COLUMNS), notes, paired.paired_on, paired.refusal,
                             **one_sided)
    deltas = [_delta(c) for c in result.changes]
    findings = [_finding(c, metric) for c in result.changes]
    # The queries that changed most: by strategy name and query id, then the largest |change| first.
    pairs = {s: paired.pair(s) for s in paired.strategies}
    strategy_of = np.concatenate([np.full(len(pairs[s][0]), s, dtype=object) for s in paired.strategies])
    rows = np.concatenate([pairs[s][0] for s in paired.strategies])
    value_a = np.concatenate([pairs[s][1] for s in paired.strategies])
    value_b = np.concatenate([pairs[s][2] for s in paired.strategies])
    change = value_b - value_a
    order = np.argsort(-np.abs(change), kind="stable")
    top = order[np.abs(change[order]) > 1e-12][:n_changed]
    changed = pd.DataFrame({
        "Strategy": [label(strategy_of[i]) for i in top], "Query id": paired.query_ids[rows[top]],
        "Query": paired.texts[rows[top]], "Run A": value_a[top], "Run B": value_b[top], "Change": change[top],
    }, columns=CHANGED_COLUMNS)
    n_shared = len(np.unique(rows))
    if {store.query_count(a.run_id), store.query_count(b.run_id)} != {n_shared}:
        notes.append(f"{n_shared} queries are in both runs (paired on query "
                     f"{'id' if paired.paired_on == 'query_id' else 'text'}); the others are left "
                     "out of the paired tests.")
    if not higher_is_better(metric):
        notes.append("Lower is better for this metric: a negative change is an improvement.")
    m = result.comparisons
    return RunComparison(a, b, metric, k, n_shared, pd.DataFrame(deltas, columns=DELTA_COLUMNS), changed,
                         notes, paired.paired_on, findings=findings,
                         statistics_note=family_note(m, "This comparison makes") if m else "", **one_sided)


def _delta(c: Change) -> dict[str, object]:
    """One strategy's row of the change table: a change on condensed lists shows their means and
    says so, one the holes withhold has no interval (engine/statistics/holes.py)."""
    d = c.difference
    if c.withheld is not None:
        return {"Strategy": label(c.strategy), "strategy": c.strategy, "Run A": c.before, "Run B": c.after,
                "Change": d.diff, "CI low": math.nan, "CI high": math.nan, "p-value": math.nan, "Comparisons": None,
                "Verdict": "withheld", "Queries": d.n}
    return {"Strategy": label(c.strategy), "strategy": c.strategy, "Run A": c.before, "Run B": c.after,
            "Change": d.diff, "CI low": d.ci_low, "CI high": d.ci_high, "p-value": d.p_value, "Comparisons": d.m,
            "Verdict": verdict(d) + (" (condensed lists)" if c.condensed else ""), "Queries": d.n}


def _finding(c: Change, metric: str) -> Sentence:
    """One strategy's change from run A to run B in words, with the figures the table shows."""
    d = c.difference
    if c.withheld is not None:
        return Sentence(f"{label(c.strategy)}: no verdict. {c.withheld}.", "warn", c.strategy)
    queries = f"; {d.n} queries" if d.estimable else ""  # else the interval's words say how many
    where = (" on condensed lists (each top k's judged results only, as many from each run: the runs judged "
             "different shares of it, or both have many holes)") if c.condensed else ""
    text = f"{label(c.strategy)}{where}: {c.before:.3f} → {c.after:.3f} ({d.diff:+.3f}; {figures_text(d)}{queries})"
    if not d.significant:
        return Sentence(f"{text}: not distinguishable from no change.", "info", c.strategy)
    better = (d.diff > 0) == higher_is_better(metric)
    return Sentence(f"{text}: a real change{' on what was judged' if c.condensed else ''}.",
                    "good" if better else "warn", c.strategy)
