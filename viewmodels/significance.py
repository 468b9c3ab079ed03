"""Paired differences between strategies, and baseline vs reranker, said in words.

A page reads several differences at once (the best strategy against each other one, each
strategy against its reranked twin): they are one family of m distinct comparisons, and every
one is computed by the one procedure (engine/statistics/paired.py): its paired bootstrap interval
at level 1 - 0.05/m, said "95% CI, adjusted for m comparisons", and "significant" exactly when
that interval excludes 0 (its p-value, from the same resamples and adjusted the same way, is then
below 0.05). A page of five comparisons at 0.05 each would otherwise call one of them significant
by chance about one time in four. A difference that is not significant is said to be not
distinguishable, and nothing more: it is not evidence that the two are equal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from searchgrade.engine.metrics import higher_is_better
from searchgrade.engine.run.strategies import label, pairs, reranker_of
from searchgrade.engine.statistics.paired import PairedDifference, interval_words, p_words
from searchgrade.engine.statistics.pairing import RESAMPLES, SEED, differences
from searchgrade.viewmodels.common import (
    WITH,
    WITHOUT,
    Sentence,
    best_row,
    metric_label,
)

if TYPE_CHECKING:
    from searchgrade.engine.run.condensed import RunLabels
    from searchgrade.engine.statistics.holes import HoleVerdict
    from searchgrade.engine.store import RunRecord, Store

RERANKER_COLUMNS = ["Strategy", "strategy", WITHOUT, WITH, "Change", "CI low", "CI high", "p-value",
                    "Comparisons", "Verdict", "Queries improved", "Queries hurt", "Unchanged"]
#: What the kept tests were computed by (``encode_tests``): tests kept by another procedure are
#: never served, they are computed again.
PROCEDURE = f"paired-bootstrap-bonferroni/{RESAMPLES}:{SEED}+holes/1"


def verdict(d: PairedDifference) -> str:
    """ "significant" when the interval excludes 0, else "not distinguishable"."""
    return "significant" if d.significant else "not distinguishable"


def format_p(p_value: float, name: str = "p") -> str:
    """ "p < 0.001", "p = 0.042"."""
    return p_words(p_value, name)


def figures_text(d: PairedDifference, decimals: int = 3) -> str:
    """The interval and the p-value of a difference, as every page says them:
    "95% CI +0.049 to +0.454, adjusted for 8 comparisons; p = 0.012"."""
    if not d.estimable:
        return interval_words(d, decimals)
    return f"{interval_words(d, decimals)}; {p_words(d.p_value)}"


def family_note(m: int, surface: str = "The page makes") -> str:
    """What "significant" means over a family of m comparisons, in words; ``surface`` says who makes
    them ("The page makes", "This comparison makes", "These figures make")."""
    if m <= 1:
        return ("Significant means the 95% CI of the paired difference excludes 0 (then p < 0.05). "
                "Not distinguishable means these queries cannot tell the two apart, not that they "
                "are equal.")
    return (f"{surface} {m} comparisons: each interval is a 95% CI adjusted for {m} comparisons "
            f"(a paired bootstrap interval at level 1 - 0.05/{m}), so that all of them together are "
            "wrong at most one time in twenty. Significant means that interval excludes 0 (then its "
            "p-value, adjusted the same way, is below 0.05). Not distinguishable means these queries "
            "cannot tell the two apart, not that they are equal.")


def _pair(wide: pd.DataFrame, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    """Strategies a's and b's values over the queries both have one for, in query order."""
    va, vb = wide[a].to_numpy(dtype=float), wide[b].to_numpy(dtype=float)
    both = ~(np.isnan(va) | np.isnan(vb))
    return va[both], vb[both]


class Family(dict):
    """A page's comparisons: (a, b) -> the PairedDifference of each one tested (as always, or on
    condensed lists); ``condensed`` the pairs tested on condensed lists, ``withheld`` those whose
    verdict the holes withhold, with the reason, and ``judged`` each compared pair's judged shares
    (engine/statistics/holes.py)."""

    def __init__(self, tested: dict[tuple[str, str], PairedDifference] | None = None,
                 condensed: Collection[tuple[str, str]] = (), withheld: dict[tuple[str, str], str] | None = None,
                 judged: dict[tuple[str, str], tuple[float, float]] | None = None) -> None:
        super().__init__(tested or {})
        self.condensed = set(condensed)
        self.withheld = dict(withheld or {})
        self.judged = dict(judged or {})


def paired_comparisons(wide: pd.DataFrame, pairs: Sequence[tuple[str, str]],
                       holes: HolesInput | None = None) -> Family:
    """Paired differences of (a, b) pairs of strategies, over the queries both have a value for.

    ``wide``: one column per strategy, one row per query. The pairs are one family: m is the
    number of distinct comparisons (a pair and its reverse are one; the reverse's interval is the
    negated one, from the same resamples). Pairs with a strategy missing, or no query in common,
    are left out. With ``holes`` (a grading that judges what it saw), each comparison passes the
    rule of engine/statistics/holes.py: as always, on condensed lists, or withheld.
    """
    kept: list[tuple[str, str]] = []
    columns = []
    for a, b in dict.fromkeys(pairs):
        if a not in wide or b not in wide:
            continue
        va, vb = _pair(wide, a, b)
        if len(va):
            kept.append((a, b))
            columns.append((va, vb))
    if not kept:
        return Family()
    if holes is not None:
        return holes.compare(wide, kept, columns)
    m = len({frozenset(pair) for pair in kept})
    tests = differences(columns, m=m)
    return Family(dict(zip(kept, tests, strict=True)))


class HolesInput:
    """What the rule for judgments with holes reads of a run at metric@k: its graded top-k lists
    (engine/run/condensed.py), where its grading judges what it saw."""

    def __init__(self, labels: RunLabels, metric: str, k: int) -> None:
        self.labels, self.metric, self.k = labels, metric, k

    def compare(self, wide: pd.DataFrame, kept: list[tuple[str, str]],
                columns: list[tuple[np.ndarray, np.ndarray]]) -> Family:
        from searchgrade.engine.statistics.holes import withheld_reason
        from searchgrade.engine.statistics.pairing import Item, holes_verdicts

        items = []
        for (a, b), (va, vb) in zip(kept, columns, strict=True):
            both = wide.index[~(wide[a].isna() | wide[b].isna())]
            items.append(Item(a, b, [(q, q) for q in both], va, vb))
        reasons = [lambda j_a, j_b, a=a, b=b: withheld_reason(label(a), label(b), j_a, j_b, self.k) for a, b in kept]
        found = holes_verdicts(self.labels, self.labels, items, self.metric, keys=[frozenset(p) for p in kept],
                               reasons=reasons)
        return family_of(kept, found or [])


def family_of(kept: Sequence[tuple[str, str]], found: Sequence[HoleVerdict]) -> Family:
    """The Family of comparisons the rule gave (engine/statistics/holes.py), in their order."""
    family = Family(judged={p: (v.judged_a, v.judged_b) for p, v in zip(kept, found, strict=True)})
    for pair, v in zip(kept, found, strict=True):
        if v.withheld is not None:
            family.withheld[pair] = v.withheld
        elif v.difference is not None:
            family[pair] = v.difference
            if v.condensed:
                family.condensed.add(pair)
    return family


def holes_input(store: Store, run: RunRecord, metric: str, k: int) -> HolesInput | None:
    """The rule's inputs for a run at metric@k, or None where it does not apply: a grading that
    counts an absent result as not relevant by design (engine/statistics/holes.py), or a metric that
    reads holes itself (bpref, the condensed NDCG, the residual, judged@k) or no grade at all."""
    from searchgrade.engine.run.condensed import RunLabels, rule_applies

    if not holes_metric(metric) or not rule_applies(store, run):  # before the lists and grades are read
        return None
    return HolesInput(RunLabels(store, run, k), metric, k)


def holes_metric(metric: str) -> bool:
    """Whether the rule applies to a metric (engine/statistics/holes.py's ``rule_metric``)."""
    from searchgrade.engine.statistics.holes import rule_metric

    return rule_metric(metric)


def results_pairs(rows: pd.DataFrame, metric: str,
                  wide: pd.DataFrame | Collection[str]) -> list[tuple[str, str]]:
    """The comparisons the Results page shows: the best strategy against each other one, and each
    retrieval strategy against its reranked twin.

    ``wide``: the strategies with values, as the columns of a wide frame or as names."""
    compared = []
    if len(rows) >= 2:
        best = best_row(rows, metric)["strategy"]
        compared += [(best, other) for other in rows["strategy"] if other != best]
    names = list(wide)  # a frame iterates over its columns
    for base, reranked in pairs(names):  # by name: a declared strategy's X_rerank too
        if reranked is not None and base in names:
            compared.append((reranked, base))
    return compared


def results_comparisons(store: Store, run: RunRecord, metric: str, k: int, rows: pd.DataFrame,
                        wide: Callable[[], pd.DataFrame]) -> Family:
    """``paired_comparisons`` of the Results page's pairs (``results_pairs``) at metric@k.

    A complete run's are computed once and kept in the store (its metrics never change: a
    re-score is a new run, a re-graded run is cleared first), with the procedure that computed
    them: tests of another procedure are computed again. A run still in progress, or stopped, is
    tested afresh each time. ``wide`` gives the metric's wide frame: read only when the tests are
    computed. Each comparison passes the rule for judgments with holes (``holes_input``).
    """
    complete = run.status == "complete"
    if complete:
        stored = store.stored_paired_tests(run.run_id, metric, k)
        kept = decode_tests(stored) if stored is not None else None
        if kept is not None:
            return kept
    values = wide()
    holes = holes_input(store, run, metric, k)
    tested = paired_comparisons(values, results_pairs(rows, metric, values), holes)
    if complete:
        store.remember_paired_tests(run.run_id, metric, k, encode_tests(tested), finished_at=run.finished_at)
    return tested


def encode_tests(tested: Family) -> str:
    """JSON text of paired comparisons, in their order, with the procedure that computed them;
    floats as Python writes them (exact; NaN where no interval could be estimated)."""
    return json.dumps({"procedure": PROCEDURE, "tests": [[a, b, *d] for (a, b), d in tested.items()],
                       "condensed": sorted(tested.condensed), "withheld": [[a, b, r] for (a, b), r in
                                                                            tested.withheld.items()],
                       "judged": [[a, b, *j] for (a, b), j in tested.judged.items()]})


def decode_tests(text: str) -> Family | None:
    """``encode_tests``' comparisons; None when another procedure (or an older version) kept them."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("procedure") != PROCEDURE:
        return None
    return Family({(a, b): PairedDifference(*figures) for a, b, *figures in data["tests"]},
                  [tuple(p) for p in data["condensed"]], {(a, b): r for a, b, r in data["withheld"]},
                  {(a, b): (ja, jb) for a, b, ja, jb in data["judged"]})


def results_family(store: Store, run: RunRecord, metric: str, k: int) -> tuple[pd.DataFrame, Family]:
    """The Results page's comparisons at metric@k, as the page computes (or reads kept) them: its
    per-strategy rows of the metric and its family of paired differences. `searchgrade show` says
    these, so the CLI and the page show the same figures."""
    from searchgrade.viewmodels.common import metric_rows
    from searchgrade.viewmodels.recompute import Figures

    figures = Figures(store, run, k)
    rows = metric_rows(figures.summary(), metric)
    return rows, results_comparisons(store, run, metric, k, rows, lambda: figures.wide(metric))


def comparison_record(a: str, b: str, d: PairedDifference, condensed: bool = False) -> dict[str, object]:
    """A paired difference as plain JSON values (None for an interval too few queries allow);
    ``condensed``: computed on condensed lists (engine/statistics/holes.py)."""
    def number(x: float) -> float | None:
        return None if x != x else x
    return {"a": a, "b": b, "diff": d.diff, "ci_low": number(d.ci_low), "ci_high": number(d.ci_high),
            "p_value": d.p_value, "n": d.n, "comparisons": d.m, "significant": d.significant,
            "condensed": condensed}


def family_records(tested: Family) -> list[dict[str, object]]:
    """Every comparison of a family as JSON: the tested ones (``condensed`` true when computed on
    condensed lists), then the withheld ones (``withheld`` true, with their ``reason``), each with
    both sides' judged shares where the rule read them."""
    out: list[dict[str, object]] = []
    for (a, b), d in tested.items():
        out.append(comparison_record(a, b, d, (a, b) in tested.condensed))
    for (a, b), reason in tested.withheld.items():
        out.append({"a": a, "b": b, "diff": None, "ci_low": None, "ci_high": None, "p_value": None, "n": None,
                    "comparisons": None, "significant": False, "condensed": False, "withheld": True,
                    "reason": reason})
    for record in out:
        judged = tested.judged.get((record["a"], record["b"]))  # type: ignore[arg-type]
        if judged is not None:
            record["judged_a"], record["judged_b"] = judged
    return out


def family_size(tested: Family) -> int:
    """The m the page's comparisons are adjusted for (0 when none)."""
    return next(iter(tested.values())).m if tested else 0


def significance(rows: pd.DataFrame, metric: str, k: int, tested: Family) -> list[Sentence]:
    """The best strategy against every other one, each said in words with its interval; a
    comparison on condensed lists says so, a withheld one says why (engine/statistics/holes.py)."""
    if len(rows) < 2:
        return [Sentence("Only one strategy was evaluated: nothing to compare.")]
    best = best_row(rows, metric)["strategy"]
    name = metric_label(metric, k)
    direction = "" if higher_is_better(metric) else "; lower is better"
    out = []
    withheld = getattr(tested, "withheld", {})
    condensed = getattr(tested, "condensed", set())
    for other in rows["strategy"]:
        if (best, other) in withheld:
            out.append(Sentence(f"{label(best)} against {label(other)}: no verdict. {withheld[(best, other)]}.",
                                "warn", other))
            continue
        if other == best or (best, other) not in tested:
            continue
        d = tested[(best, other)]
        queries = f"; {d.n} queries" if d.estimable else ""  # else the interval's words say how many
        if (best, other) in condensed:
            out.append(_condensed_sentence(best, other, d, metric, k, queries, direction))
            continue
        gap = f"{d.diff:+.3f} {name} ({figures_text(d)}{queries}{direction})"
        if d.significant:
            out.append(Sentence(f"{label(best)} beats {label(other)} by {gap}: "
                                "a real difference.", "good", other))
        elif not d.estimable:
            out.append(Sentence(f"{label(best)} and {label(other)} cannot be told apart on so few "
                                f"queries: {gap}.", "info", other))
        else:
            out.append(Sentence(f"{label(best)} and {label(other)} are not "
                                f"distinguishable: {gap}; the gap could be noise.", "info", other))
    return out


def _condensed_sentence(best: str, other: str, d: PairedDifference, metric: str, k: int, queries: str,
                        direction: str) -> Sentence:
    """A comparison made on condensed lists, in words: who leads on the results both have judged."""
    name = metric_label(metric, k)
    where = (f"on condensed lists (each top {k}'s judged results only, as many from each: their judged shares "
             "differ, or both have many holes)")
    if not d.significant:
        return Sentence(f"{label(best)} and {label(other)} are not distinguishable {where}: {d.diff:+.3f} {name} "
                        f"({figures_text(d)}{queries}{direction}).", "info", other)
    sign = 1 if higher_is_better(metric) else -1
    ahead, behind = (best, other) if sign * d.diff > 0 else (other, best)
    return Sentence(f"{label(ahead)} beats {label(behind)} by {abs(d.diff):.3f} {name} {where} "
                    f"({figures_text(d)}{queries}{direction}): a real difference on what was judged.", "good", other)


def reranker_frame(rows: list[dict]) -> pd.DataFrame:
    """``reranker_rows`` as the table the Results page shows."""
    return pd.DataFrame(rows, columns=RERANKER_COLUMNS)


def reranker_rows(wide: pd.DataFrame, tested: Family, metric: str) -> list[dict]:
    """Baseline vs reranker per retrieval strategy, with its paired difference over the same
    queries (the page's family), as plain Python values (``reranker_frame`` makes them the
    Results table): "p-value" is the adjusted one, "Comparisons" the m it is adjusted for. A
    comparison on condensed lists says so in its verdict; a withheld one has no figures and says why.

    A query is improved when the reranker moves its value the better way (down, for a metric
    where lower is better).
    """
    sign = 1 if higher_is_better(metric) else -1
    out = []
    withheld = getattr(tested, "withheld", {})
    condensed = getattr(tested, "condensed", set())
    nan = float("nan")
    for base, reranked in pairs(wide.columns):  # by name: a declared strategy's X_rerank too
        if reranked is None or ((reranked, base) not in tested and (reranked, base) not in withheld):
            continue
        with_, without = _pair(wide, reranked, base)
        diff = sign * (with_ - without)
        if (reranked, base) in withheld:
            d = PairedDifference(float((with_ - without).mean()), nan, nan, nan, len(with_), None)  # type: ignore[arg-type]
            said = f"no verdict: {withheld[(reranked, base)]}"
        else:
            d = tested[(reranked, base)]
            said = verdict(d) + (" (on condensed lists)" if (reranked, base) in condensed else "")
        out.append({
            # A declared reranker's twin is named ("ANN (dense) + tei"): a base several rerankers
            # rerank has a row per reranker; the default reranker's row keeps the base's name.
            "Strategy": label(reranked) if reranker_of(reranked) else label(base), "strategy": base,
            WITHOUT: float(without.mean()), WITH: float(with_.mean()),
            "Change": d.diff, "CI low": d.ci_low, "CI high": d.ci_high,
            "p-value": d.p_value, "Comparisons": d.m, "Verdict": said,
            "Queries improved": int((diff > 1e-12).sum()), "Queries hurt": int((diff < -1e-12).sum()),
            "Unchanged": int((np.abs(diff) <= 1e-12).sum()),
        })
    return out
