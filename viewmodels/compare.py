"""The Compare screen: run B against run A per strategy, paired over the queries both evaluated.

Which queries are "the same" depends on where they came from. A collection's own queries (qrels
mode) keep their ids from run to run, so they pair by id. Generated queries (LLM mode) do not:
``g-<doc>-n1`` names whatever question the model wrote for that document, a different one when
the model, the prompt or the sample changed, so they pair by their text; runs that share no
question are refused with the way to get a comparable run (``--queries-from``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.scoring import higher_is_better
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.statistics.holes import HoleVerdict
from searchgrade.engine.statistics.paired import paired_differences
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import (
    PAIRED_RESAMPLES,
    PRIMARY_K,
    PRIMARY_METRIC,
    Sentence,
    one_session,
    plural,
)
from searchgrade.viewmodels.recompute import Figures
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


def _flat(prefix: str, value: object, out: dict[str, object]) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            _flat(f"{prefix}.{key}" if prefix else str(key), value[key], out)
    else:
        out[prefix] = value


def settings_diff(a: RunRecord, b: RunRecord) -> pd.DataFrame:
    """The settings that differ between two runs (the run record's and its config's, nested keys
    dotted): Setting, Run A, Run B as text ("(not set)" where a run has none)."""
    flat_a: dict[str, object] = {}
    flat_b: dict[str, object] = {}
    for run, flat in ((a, flat_a), (b, flat_b)):
        for name in RUN_SETTINGS:
            flat[name] = getattr(run, name)
        _flat("", run.config or {}, flat)
        flat.pop("llm.api_key", None)  # never shown (a config holds none, but say so in code)
    rows = []
    for key in sorted(set(flat_a) | set(flat_b), key=lambda k: (k not in RUN_SETTINGS, k)):
        va, vb = flat_a.get(key), flat_b.get(key)
        if va != vb:
            rows.append({"Setting": key, "Run A": "(not set)" if va is None else str(va),
                         "Run B": "(not set)" if vb is None else str(vb)})
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


@dataclass
class PairedValues:
    """One metric of runs A and B over the queries both evaluated: rows are the shared queries
    (in run A's id order), columns the strategies both ran (by name), NaN where a run has no value."""

    strategies: list[str]
    query_ids: np.ndarray
    texts: np.ndarray
    a: np.ndarray
    b: np.ndarray
    paired_on: str
    notes: list[str]
    refusal: str | None
    #: Run B's id of each shared query (the same as run A's when paired on the id).
    query_ids_b: np.ndarray | None = None

    def pair(self, strategy: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One strategy's shared queries with a value in both runs: (row indices, A's, B's)."""
        j = self.strategies.index(strategy)
        rows = np.flatnonzero(~(np.isnan(self.a[:, j]) | np.isnan(self.b[:, j])))
        return rows, self.a[rows, j], self.b[rows, j]

    def frame(self) -> pd.DataFrame:
        """Long form: strategy, query_id (run A's), text, value_a, value_b; by strategy and query id."""
        parts = []
        for strategy in self.strategies:
            rows, a, b = self.pair(strategy)
            parts.append(pd.DataFrame({"strategy": strategy, "query_id": self.query_ids[rows],
                                       "text": self.texts[rows], "value_a": a, "value_b": b}))
        columns = ["strategy", "query_id", "text", "value_a", "value_b"]
        return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def pairing_key(run_a: RunRecord, run_b: RunRecord) -> str:
    """"query_id" when both runs evaluated a collection's own queries, else "text"."""
    return "query_id" if run_a.mode != "llm" and run_b.mode != "llm" else "text"


def paired_values(store: Store, a: RunRecord, b: RunRecord, metric: str, k: int) -> PairedValues:
    """One metric of runs A and B per strategy over the queries both evaluated (see the module)."""
    on = pairing_key(a, b)
    queries_a, queries_b = store.query_table(a.run_id), store.query_table(b.run_id)
    notes = []
    if on == "text":
        repeated = int(queries_a["repeated"].sum() + queries_b["repeated"].sum())
        if repeated:
            notes.append(f"{plural(repeated, 'query is', 'queries are')} left out: the same text "
                         "appears twice in one run, so it cannot be paired.")
        queries_a, queries_b = queries_a[~queries_a["repeated"]], queries_b[~queries_b["repeated"]]
    shared = queries_a[["query_id", "text"]].merge(queries_b[["query_id", "text"]], on=on,
                                                   suffixes=("", "_b"))
    if on == "query_id":
        shared["query_id_b"] = shared["query_id"]
    shared = shared.sort_values("query_id", kind="stable")
    if shared.empty:
        empty = np.empty((0, 0))
        return PairedValues([], np.array([], dtype=object), np.array([], dtype=object), empty, empty, on,
                            notes, _refusal(a, b, on, queries_a, queries_b))
    wide_a = Figures(store, a, k).wide(metric).reindex(shared["query_id"])
    wide_b = Figures(store, b, k).wide(metric).reindex(shared["query_id_b"])
    strategies = sorted(set(wide_a.columns) & set(wide_b.columns))
    if not strategies:
        empty = np.empty((0, 0))
        return PairedValues([], np.array([], dtype=object), np.array([], dtype=object), empty, empty, on, notes,
                            f"These runs have no strategy in common (run A: {', '.join(map(label, wide_a.columns))}; "
                            f"run B: {', '.join(map(label, wide_b.columns))}): nothing to compare.")
    return PairedValues(strategies, shared["query_id"].to_numpy(dtype=object),
                        shared["text"].to_numpy(dtype=object), wide_a[strategies].to_numpy(dtype=float),
                        wide_b[strategies].to_numpy(dtype=float), on, notes, None,
                        shared["query_id_b"].to_numpy(dtype=object))


def _refusal(a: RunRecord, b: RunRecord, on: str, queries_a: pd.DataFrame, queries_b: pd.DataFrame) -> str:
    counts = f"run A has {len(queries_a):,} queries, run B {len(queries_b):,}"
    if on == "text":
        return (f"These runs share no query text ({counts}): generated queries differ whenever the "
                "model, the prompt or the document sample changes, so there is nothing to pair. "
                f"Evaluate the new configuration on run A's questions: `searchgrade evaluate "
                f"{a.collection_name} --llm --queries-from {a.run_id}` (on the Evaluate page: "
                "reuse the queries of run A), then compare that run with A.")
    return (f"These runs share no query id ({counts}): a paired comparison needs the same queries. "
            "Compare runs of the same collection and query set (the same --max-queries sample).")


@one_session
def compare_runs(store: Store, run_a: str, run_b: str, metric: str = PRIMARY_METRIC,
                 k: int = PRIMARY_K, n_changed: int = 20) -> RunComparison:
    """Run B against run A per strategy, paired over the queries both evaluated: one family of m
    comparisons (one per strategy), each with its 95% CI adjusted for m (engine/statistics/paired.py)."""
    a, b = store.get_run(run_a), store.get_run(run_b)
    for run in (a, b):
        if k > run.depth:
            raise SearchGradeError(f"k of {k} is above the depth of run {run.run_id} ({run.depth}); "
                                   "pick a k both runs kept")
    notes = []
    if a.collection_name != b.collection_name:
        notes.append(f"The runs evaluate different collections ({a.collection_name}, "
                     f"{b.collection_name}): only queries with the same "
                     f"{'id' if pairing_key(a, b) == 'query_id' else 'text'} are paired.")
    paired = paired_values(store, a, b, metric, k)
    notes += paired.notes
    ran_a, ran_b = set(store.result_strategies(a.run_id)), set(store.result_strategies(b.run_id))
    one_sided = {"only_in_a": [label(s) for s in strategy_order(ran_a - ran_b)],
                 "only_in_b": [label(s) for s in strategy_order(ran_b - ran_a)],
                 "settings": settings_diff(a, b)}
    if paired.refusal is not None:
        return RunComparison(a, b, metric, k, 0, pd.DataFrame(columns=DELTA_COLUMNS),
                             pd.DataFrame(columns=CHANGED_COLUMNS), notes, paired.paired_on, paired.refusal,
                             **one_sided)
    pairs = {s: paired.pair(s) for s in paired.strategies}
    shown = [s for s in strategy_order(pairs) if len(pairs[s][0])]
    found = _holes_verdicts(store, a, b, metric, k, paired, pairs, shown) if shown else None
    if found is None:
        tests = paired_differences([(pairs[s][2], pairs[s][1]) for s in shown], n_resamples=PAIRED_RESAMPLES,
                                   seed=0) if shown else []
        found = [HoleVerdict(d, False, None, math.nan, math.nan, float(pairs[s][2].mean()),
                             float(pairs[s][1].mean())) for s, d in zip(shown, tests, strict=True)]
    tests = [v.difference for v in found if v.difference is not None]
    deltas = [_delta(s, pairs[s], v) for s, v in zip(shown, found, strict=True)]
    findings = [_finding(s, v, metric) for s, v in zip(shown, found, strict=True)]
    # The queries that changed most: by strategy name and query id, then the largest |change| first.
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
    return RunComparison(a, b, metric, k, n_shared, pd.DataFrame(deltas, columns=DELTA_COLUMNS), changed,
                         notes, paired.paired_on, findings=findings,
                         statistics_note=family_note(len(tests)) if tests else "", **one_sided)


def _holes_verdicts(store: Store, a: RunRecord, b: RunRecord, metric: str, k: int, paired: PairedValues,
                    pairs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
                    shown: list[str]) -> list[HoleVerdict] | None:
    """Each strategy's change from A to B by the rule for judgments with holes (as always, on
    condensed lists, or withheld: engine/statistics/holes.py); None where it does not apply."""
    from searchgrade.engine.run.condensed import Item, RunLabels, holes_verdicts
    from searchgrade.engine.statistics.holes import withheld_reason
    from searchgrade.viewmodels.significance import holes_metric

    if not holes_metric(metric):
        return None
    after, before = RunLabels(store, b, k), RunLabels(store, a, k)
    ids_b = paired.query_ids_b if paired.query_ids_b is not None else paired.query_ids
    items = [Item(s, s, [(ids_b[r], paired.query_ids[r]) for r in pairs[s][0]], pairs[s][2], pairs[s][1])
             for s in shown]
    reasons = [lambda j_b, j_a, s=s: withheld_reason(f"{label(s)} in run B", f"{label(s)} in run A", j_b, j_a, k)
               for s in shown]
    return holes_verdicts(after, before, items, metric, keys=shown, reasons=reasons, n_resamples=PAIRED_RESAMPLES)


def _delta(strategy: str, pair: tuple[np.ndarray, np.ndarray, np.ndarray], v: HoleVerdict) -> dict[str, object]:
    """One strategy's row of the change table; a change on condensed lists shows their means."""
    d = v.difference
    if d is None:
        return {"Strategy": label(strategy), "strategy": strategy, "Run A": float(pair[1].mean()),
                "Run B": float(pair[2].mean()), "Change": float((pair[2] - pair[1]).mean()), "CI low": math.nan,
                "CI high": math.nan, "p-value": math.nan, "Comparisons": None, "Verdict": "withheld",
                "Queries": len(pair[0])}
    return {"Strategy": label(strategy), "strategy": strategy, "Run A": v.mean_b, "Run B": v.mean_a,
            "Change": d.diff, "CI low": d.ci_low, "CI high": d.ci_high, "p-value": d.p_value, "Comparisons": d.m,
            "Verdict": verdict(d) + (" (condensed lists)" if v.condensed else ""), "Queries": d.n}


def _finding(strategy: str, v: HoleVerdict, metric: str) -> Sentence:
    """One strategy's change from run A to run B in words, with the figures the table shows."""
    d = v.difference
    if d is None:
        return Sentence(f"{label(strategy)}: no verdict. {v.withheld}.", "warn", strategy)
    queries = f"; {d.n} queries" if d.estimable else ""  # else the interval's words say how many
    where = (" on condensed lists (each top k's judged results only, as many from each run: the runs judged "
             "different shares of it, or both have many holes)") if v.condensed else ""
    text = f"{label(strategy)}{where}: {v.mean_b:.3f} → {v.mean_a:.3f} ({d.diff:+.3f}; {figures_text(d)}{queries})"
    if not d.significant:
        return Sentence(f"{text}: not distinguishable from no change.", "info", strategy)
    better = (d.diff > 0) == higher_is_better(metric)
    return Sentence(f"{text}: a real change{' on what was judged' if v.condensed else ''}.",
                    "good" if better else "warn", strategy)
