"""Paired significance tests between strategies, and baseline vs reranker, said in words.

A page tests several differences at once (the best strategy against each other one, each
strategy against its reranked twin). Each test's p-value is adjusted with Holm's method over all
the distinct comparisons the page shows, and "significant" means the adjusted p-value is below
ALPHA: a page of five comparisons at 0.05 would otherwise call one of them significant by chance
about one time in four. A difference that is not significant is said to be not distinguishable,
and nothing more: it is not evidence that the two are equal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from searchgrade.engine.report.common import (
    ALPHA,
    PAIRED_RESAMPLES,
    WITH,
    WITHOUT,
    Sentence,
    best_row,
    metric_label,
)
from searchgrade.engine.run.scoring import higher_is_better
from searchgrade.engine.run.strategies import label, pairs
from searchgrade.engine.statistics.multiple import holm
from searchgrade.engine.statistics.sign_flip import PairedTest, paired_tests

if TYPE_CHECKING:
    from searchgrade.engine.store import RunRecord, Store

RERANKER_COLUMNS = ["Strategy", "strategy", WITHOUT, WITH, "Change", "CI low", "CI high", "p-value",
                    "Adjusted p (Holm)", "Verdict", "Queries improved", "Queries hurt", "Unchanged"]


class Tested(NamedTuple):
    """One paired comparison (a - b over the queries both have a value for), and its p-value
    adjusted over the comparisons shown with it."""

    test: PairedTest
    adjusted_p: float
    #: How many distinct comparisons the adjustment was over.
    family: int


def verdict(p_value: float) -> str:
    """"significant" below ALPHA, else "not distinguishable" (give it the adjusted p-value)."""
    return "significant" if p_value < ALPHA else "not distinguishable"


def format_p(p_value: float, name: str = "p") -> str:
    """ "p < 0.001", "p = 0.042"."""
    return f"{name} < 0.001" if p_value < 0.001 else f"{name} = {p_value:.3f}"


def p_values_text(tested: Tested) -> str:
    """The p-value, and the adjusted one when other comparisons were shown with it."""
    text = format_p(tested.test.p_value)
    if tested.family > 1:
        text += (f", {format_p(tested.adjusted_p, 'Holm-adjusted p')} over "
                 f"{tested.family} comparisons")
    return text


def _pair(wide: pd.DataFrame, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    """Strategies a's and b's values over the queries both have one for, in query order."""
    va, vb = wide[a].to_numpy(dtype=float), wide[b].to_numpy(dtype=float)
    both = ~(np.isnan(va) | np.isnan(vb))
    return va[both], vb[both]


def paired_comparisons(wide: pd.DataFrame, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Tested]:
    """Paired tests of (a, b) pairs of strategies, over the queries both have a value for.

    ``wide``: one column per strategy, one row per query. All the tests share one draw of
    resamples and sign flips; their p-values are Holm-adjusted over the distinct comparisons (a
    pair and its reverse are one). Pairs with a strategy missing, or no query in common, are
    left out.
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
    tests = paired_tests(columns, n_resamples=PAIRED_RESAMPLES, seed=0)
    family = list(dict.fromkeys(frozenset(pair) for pair in kept))
    p_of = {frozenset(pair): test.p_value for pair, test in zip(kept, tests, strict=True)}
    adjusted = dict(zip(family, holm([p_of[f] for f in family]), strict=True))
    return {pair: Tested(test, adjusted[frozenset(pair)], len(family))
            for pair, test in zip(kept, tests, strict=True)}


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
                        wide: Callable[[], pd.DataFrame]) -> dict[tuple[str, str], Tested]:
    """``paired_comparisons`` of the Results page's pairs (``results_pairs``) at metric@k.

    A complete run's are computed once and kept in the store (its metrics never change: a
    re-score is a new run, a re-graded run is cleared first); a run still in progress, or
    stopped, is tested afresh each time. ``wide`` gives the metric's wide frame: read only when
    the tests are computed.
    """
    complete = run.status == "complete"
    if complete:
        stored = store.stored_paired_tests(run.run_id, metric, k)
        if stored is not None:
            return decode_tests(stored)
    values = wide()
    tested = paired_comparisons(values, results_pairs(rows, metric, values))
    if complete:
        store.remember_paired_tests(run.run_id, metric, k, encode_tests(tested), finished_at=run.finished_at)
    return tested


def encode_tests(tested: dict[tuple[str, str], Tested]) -> str:
    """JSON text of paired comparisons, in their order; floats as Python writes them (exact)."""
    return json.dumps([[a, b, *t.test, t.adjusted_p, t.family] for (a, b), t in tested.items()])


def decode_tests(text: str) -> dict[tuple[str, str], Tested]:
    out = {}
    for a, b, diff, ci_low, ci_high, p_value, n, adjusted_p, family in json.loads(text):
        out[(a, b)] = Tested(PairedTest(diff, ci_low, ci_high, p_value, n), adjusted_p, family)
    return out


def significance(rows: pd.DataFrame, metric: str, k: int,
                 tested: dict[tuple[str, str], Tested]) -> list[Sentence]:
    """The best strategy against every other one, each said in words with its paired test."""
    if len(rows) < 2:
        return [Sentence("Only one strategy was evaluated: nothing to compare.")]
    best = best_row(rows, metric)["strategy"]
    name = metric_label(metric, k)
    direction = "" if higher_is_better(metric) else "; lower is better"
    out = []
    for other in rows["strategy"]:
        if other == best or (best, other) not in tested:
            continue
        result = tested[(best, other)]
        test = result.test
        gap = (f"{test.diff:+.3f} {name} (95% CI {test.ci_low:+.3f} to {test.ci_high:+.3f}, "
               f"{p_values_text(result)}, {test.n} queries{direction})")
        if result.adjusted_p < ALPHA:
            out.append(Sentence(f"{label(best)} beats {label(other)} by {gap}: "
                                "a real difference.", "good", other))
        else:
            out.append(Sentence(f"{label(best)} and {label(other)} are not "
                                f"distinguishable: {gap}; the gap could be noise.", "info", other))
    return out


def reranker_frame(rows: list[dict]) -> pd.DataFrame:
    """``reranker_rows`` as the table the Results page shows."""
    return pd.DataFrame(rows, columns=RERANKER_COLUMNS)


def reranker_rows(wide: pd.DataFrame, tested: dict[tuple[str, str], Tested], metric: str) -> list[dict]:
    """Baseline vs reranker per retrieval strategy, with a paired test over the same queries, as
    plain Python values (``reranker_frame`` makes them the Results table).

    A query is improved when the reranker moves its value the better way (down, for a metric
    where lower is better).
    """
    sign = 1 if higher_is_better(metric) else -1
    out = []
    for base, reranked in pairs(wide.columns):  # by name: a declared strategy's X_rerank too
        if reranked is None or (reranked, base) not in tested:
            continue
        result = tested[(reranked, base)]
        test = result.test
        with_, without = _pair(wide, reranked, base)
        diff = sign * (with_ - without)
        out.append({
            "Strategy": label(base), "strategy": base,
            WITHOUT: float(without.mean()), WITH: float(with_.mean()),
            "Change": test.diff, "CI low": test.ci_low, "CI high": test.ci_high,
            "p-value": test.p_value, "Adjusted p (Holm)": result.adjusted_p,
            "Verdict": verdict(result.adjusted_p),
            "Queries improved": int((diff > 1e-12).sum()), "Queries hurt": int((diff < -1e-12).sum()),
            "Unchanged": int((np.abs(diff) <= 1e-12).sum()),
        })
    return out
