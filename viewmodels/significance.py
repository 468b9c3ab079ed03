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
    from searchgrade.engine.store import RunRecord, Store

RERANKER_COLUMNS = ["Strategy", "strategy", WITHOUT, WITH, "Change", "CI low", "CI high", "p-value",
                    "Comparisons", "Verdict", "Queries improved", "Queries hurt", "Unchanged"]
#: What the kept tests were computed by (``encode_tests``): tests kept by another procedure are
#: never served, they are computed again.
PROCEDURE = f"paired-bootstrap-bonferroni/{RESAMPLES}:{SEED}"


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


def paired_comparisons(wide: pd.DataFrame, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], PairedDifference]:
    """Paired differences of (a, b) pairs of strategies, over the queries both have a value for.

    ``wide``: one column per strategy, one row per query. The pairs are one family: m is the
    number of distinct comparisons (a pair and its reverse are one; the reverse's interval is the
    negated one, from the same resamples). Pairs with a strategy missing, or no query in common,
    are left out.
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
    m = len({frozenset(pair) for pair in kept})
    if not kept:
        return {}
    tests = differences(columns, m=m)
    return dict(zip(kept, tests, strict=True))


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
                        wide: Callable[[], pd.DataFrame]) -> dict[tuple[str, str], PairedDifference]:
    """``paired_comparisons`` of the Results page's pairs (``results_pairs``) at metric@k.

    A complete run's are computed once and kept in the store (its metrics never change: a
    re-score is a new run, a re-graded run is cleared first), with the procedure that computed
    them: tests of another procedure are computed again. A run still in progress, or stopped, is
    tested afresh each time. ``wide`` gives the metric's wide frame: read only when the tests
    are computed.
    """
    complete = run.status == "complete"
    if complete:
        stored = store.stored_paired_tests(run.run_id, metric, k)
        kept = decode_tests(stored) if stored is not None else None
        if kept is not None:
            return kept
    values = wide()
    tested = paired_comparisons(values, results_pairs(rows, metric, values))
    if complete:
        store.remember_paired_tests(run.run_id, metric, k, encode_tests(tested), finished_at=run.finished_at)
    return tested


def encode_tests(tested: dict[tuple[str, str], PairedDifference]) -> str:
    """JSON text of paired comparisons, in their order, with the procedure that computed them;
    floats as Python writes them (exact; NaN where no interval could be estimated)."""
    return json.dumps({"procedure": PROCEDURE, "tests": [[a, b, *d] for (a, b), d in tested.items()]})


def decode_tests(text: str) -> dict[tuple[str, str], PairedDifference] | None:
    """``encode_tests``' comparisons; None when another procedure (or an older version) kept them."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("procedure") != PROCEDURE:
        return None
    return {(a, b): PairedDifference(*figures) for a, b, *figures in data["tests"]}


def results_family(store: Store, run: RunRecord, metric: str,
                   k: int) -> tuple[pd.DataFrame, dict[tuple[str, str], PairedDifference]]:
    """The Results page's comparisons at metric@k, as the page computes (or reads kept) them: its
    per-strategy rows of the metric and its family of paired differences. `searchgrade show` says
    these, so the CLI and the page show the same figures."""
    from searchgrade.viewmodels.common import metric_rows
    from searchgrade.viewmodels.recompute import Figures

    figures = Figures(store, run, k)
    rows = metric_rows(figures.summary(), metric)
    return rows, results_comparisons(store, run, metric, k, rows, lambda: figures.wide(metric))


def comparison_record(a: str, b: str, d: PairedDifference) -> dict[str, object]:
    """A paired difference as plain JSON values (None for an interval too few queries allow)."""
    def number(x: float) -> float | None:
        return None if x != x else x
    return {"a": a, "b": b, "diff": d.diff, "ci_low": number(d.ci_low), "ci_high": number(d.ci_high),
            "p_value": d.p_value, "n": d.n, "comparisons": d.m, "significant": d.significant}


def family_size(tested: dict[tuple[str, str], PairedDifference]) -> int:
    """The m the page's comparisons are adjusted for (0 when none)."""
    return next(iter(tested.values())).m if tested else 0


def significance(rows: pd.DataFrame, metric: str, k: int,
                 tested: dict[tuple[str, str], PairedDifference]) -> list[Sentence]:
    """The best strategy against every other one, each said in words with its interval."""
    if len(rows) < 2:
        return [Sentence("Only one strategy was evaluated: nothing to compare.")]
    best = best_row(rows, metric)["strategy"]
    name = metric_label(metric, k)
    direction = "" if higher_is_better(metric) else "; lower is better"
    out = []
    for other in rows["strategy"]:
        if other == best or (best, other) not in tested:
            continue
        d = tested[(best, other)]
        queries = f"; {d.n} queries" if d.estimable else ""  # else the interval's words say how many
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


def reranker_frame(rows: list[dict]) -> pd.DataFrame:
    """``reranker_rows`` as the table the Results page shows."""
    return pd.DataFrame(rows, columns=RERANKER_COLUMNS)


def reranker_rows(wide: pd.DataFrame, tested: dict[tuple[str, str], PairedDifference], metric: str) -> list[dict]:
    """Baseline vs reranker per retrieval strategy, with its paired difference over the same
    queries (the page's family), as plain Python values (``reranker_frame`` makes them the
    Results table): "p-value" is the adjusted one, "Comparisons" the m it is adjusted for.

    A query is improved when the reranker moves its value the better way (down, for a metric
    where lower is better).
    """
    sign = 1 if higher_is_better(metric) else -1
    out = []
    for base, reranked in pairs(wide.columns):  # by name: a declared strategy's X_rerank too
        if reranked is None or (reranked, base) not in tested:
            continue
        d = tested[(reranked, base)]
        with_, without = _pair(wide, reranked, base)
        diff = sign * (with_ - without)
        out.append({
            # A declared reranker's twin is named ("ANN (dense) + tei"): a base several rerankers
            # rerank has a row per reranker; the default reranker's row keeps the base's name.
            "Strategy": label(reranked) if reranker_of(reranked) else label(base), "strategy": base,
            WITHOUT: float(without.mean()), WITH: float(with_.mean()),
            "Change": d.diff, "CI low": d.ci_low, "CI high": d.ci_high,
            "p-value": d.p_value, "Comparisons": d.m, "Verdict": verdict(d),
            "Queries improved": int((diff > 1e-12).sum()), "Queries hurt": int((diff < -1e-12).sum()),
            "Unchanged": int((np.abs(diff) <= 1e-12).sum()),
        })
    return out
