"""Decision agreement: does a proxy for people's grades (an LLM judge, a panel of judges, clicks)
make the decisions people's grades make?

A run is read for its decisions ("which strategy is better"), and a proxy can agree with people
item by item and still order the systems differently, or the other way round (Clarke & Dietz 2024:
LLM judges reach Kendall's tau 0.84-0.89 against TREC's system rankings with an item kappa near
0.5, the agreement weakest among the top systems). So the same systems are scored twice over the
same queries, once with people's grades and once with the proxy's, and compared two ways:

- **Kendall's tau-b** (engine/statistics/kendall.py) between the systems' mean metric under people
  and under the proxy, from ``MIN_TAU_SYSTEMS`` systems up (below, a two-system order is one
  verdict, not a ranking); its 95% interval is the percentile interval of tau over
  ``TAU_RESAMPLES`` bootstrap resamples of the queries (one draw for both gradings).
- **Pairwise verdicts.** For each comparison (a, b) the verdict under each grading comes from the
  project's one paired procedure (engine/statistics/paired.py), the comparisons read together
  being its family of m: "a is better", "b is better" (the adjusted interval excludes 0) or "not
  distinguishable". Each comparison is then one of ``KINDS``: the same winner, neither
  distinguishes, a winner only under the proxy, a winner only under people, or a reversal (both
  name a winner, not the same). The **decision agreement** is the share of comparisons whose
  verdicts agree (the same winner, or neither). Its 95% interval is a bootstrap over queries:
  ``OUTER_RESAMPLES`` resamples of the queries, each giving both gradings' verdicts by the same
  procedure (nested: every resample runs the paired procedure anew, with the fewest resamples the
  procedure accepts for the family, ``resamples_for(m, alpha, 1)``: 800 m; the point's verdicts use
  the resample policy of every comparison the app shows, engine/statistics/pairing.py's
  ``differences``), and the agreement's percentile interval over them.

Several proxies are compared with people at once (``compare_gradings``): every proxy's verdicts in
a resample come from the one draw that resample makes, so the difference between two proxies'
agreement has its own paired interval (``agreement_difference``).

Below the minimums a figure is None with a note saying why: tau needs 3 systems; a verdict in a
family of m needs ``min_queries(m)`` queries (engine/statistics/paired.py), without which every
comparison would read "not distinguishable" on both sides and agree trivially.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import NamedTuple

import numpy as np

from searchgrade.engine.statistics.judge_vs_human import Estimate, percentile_estimate
from searchgrade.engine.statistics.kendall import kendall_tau_b_rows
from searchgrade.engine.statistics.paired import PairedDifference, min_queries, paired_differences
from searchgrade.engine.statistics.resampling import as_values, one_blas_thread, resampled_means

#: Kendall's tau is computed from this many systems up.
MIN_TAU_SYSTEMS = 3
#: Bootstrap resamples of tau's interval.
TAU_RESAMPLES = 2_000
#: Outer bootstrap resamples of the decision agreement's interval (each runs the paired procedure).
OUTER_RESAMPLES = 200
#: The most resampled means (inner resamples x columns) one call of the paired procedure holds
#: while the outer resamples run (about 64 MB).
OUTER_CELLS = 8_000_000
#: What a comparison's two verdicts can be, the first two counting as agreement.
KINDS = ("same winner", "neither", "proxy only", "people only", "reversal")
AGREEING = frozenset(KINDS[:2])


class PairVerdict(NamedTuple):
    """One comparison under both gradings: a - b under people's grades and under the proxy's."""

    a: str
    b: str
    people: PairedDifference
    proxy: PairedDifference
    higher_is_better: bool = True

    def _winner(self, d: PairedDifference) -> str | None:
        if not d.significant:
            return None
        return self.a if (d.diff > 0) == self.higher_is_better else self.b

    @property
    def people_winner(self) -> str | None:
        return self._winner(self.people)

    @property
    def proxy_winner(self) -> str | None:
        return self._winner(self.proxy)

    @property
    def kind(self) -> str:
        """One of KINDS."""
        people, proxy = self.people_winner, self.proxy_winner
        if people == proxy:
            return "same winner" if people is not None else "neither"
        if people is None:
            return "proxy only"
        return "people only" if proxy is None else "reversal"

    @property
    def agrees(self) -> bool:
        return self.kind in AGREEING


@dataclass(frozen=True)
class DecisionAgreement:
    """A proxy's decisions against people's on the same systems and queries."""

    systems: list[str]
    n_queries: int
    #: Each system's mean metric under people's grades and under the proxy's, in ``systems`` order.
    people_means: list[float]
    proxy_means: list[float]
    #: Kendall's tau-b of the two orders, with its interval (value None below the minimum).
    tau: Estimate
    #: The share of comparisons whose verdicts agree, with its interval (None below the minimum).
    agreement: Estimate
    #: Every comparison's two verdicts (empty when no verdict can be given).
    verdicts: list[PairVerdict] = field(default_factory=list)
    #: Why a figure is missing, in words.
    notes: list[str] = field(default_factory=list)

    @property
    def compared(self) -> int:
        return len(self.verdicts)

    @property
    def agreeing(self) -> int:
        return sum(v.agrees for v in self.verdicts)

    @property
    def differing(self) -> list[PairVerdict]:
        """The comparisons the proxy decides differently from people."""
        return [v for v in self.verdicts if not v.agrees]


@dataclass(frozen=True)
class Decisions:
    """Every proxy's DecisionAgreement, and each proxy's agreement per outer resample (one draw
    for all), from which differences between proxies get paired intervals."""

    by_proxy: dict[str, DecisionAgreement]
    outer: dict[str, np.ndarray]


def _check(people: Mapping[str, Sequence[float]], proxies: Mapping[str, Mapping[str, Sequence[float]]],
           comparisons: Sequence[tuple[str, str]]) -> tuple[list[str], np.ndarray, dict[str, np.ndarray], int]:
    systems = list(people)
    matrix = np.stack([as_values(people[s], f"people[{s!r}]") for s in systems]) if systems else np.empty((0, 0))
    n = matrix.shape[1] if systems else 0
    if systems and (matrix.shape[1] == 0):
        raise ValueError("no query: decision agreement needs the systems scored on at least one query")
    out = {}
    for name, values in proxies.items():
        if set(values) != set(systems):
            raise ValueError(f"proxy {name!r} scores {sorted(values)} and people {sorted(systems)}: score the "
                             "same systems on both sides")
        rows = np.stack([as_values(values[s], f"{name}[{s!r}]") for s in systems]) if systems else matrix
        if rows.shape != matrix.shape:
            raise ValueError(f"proxy {name!r} has {rows.shape[1]} values per system and people {n}: one value "
                             "per query, over the same queries in the same order")
        out[name] = rows
    unknown = sorted({s for pair in comparisons for s in pair} - set(systems))
    if unknown:
        raise ValueError(f"comparisons name {unknown}, which are not among the systems {systems}")
    return systems, matrix, out, n


def _verdicts(matrix: np.ndarray, proxies: dict[str, np.ndarray], index: dict[str, int],
              comparisons: Sequence[tuple[str, str]], higher_is_better: bool) -> dict[str, list[PairVerdict]]:
    """Each proxy's verdicts on the comparisons, people's and every proxy's from one call (one draw),
    with the resample policy of every comparison the app shows (engine/statistics/pairing.py)."""
    from searchgrade.engine.statistics.pairing import differences

    sides = [matrix, *proxies.values()]
    pairs = [(side[index[a]], side[index[b]]) for side in sides for a, b in comparisons]
    diffs = differences(pairs, m=len(comparisons))
    m = len(comparisons)
    people = diffs[:m]
    return {name: [PairVerdict(a, b, people[i], diffs[(j + 1) * m + i], higher_is_better)
                   for i, (a, b) in enumerate(comparisons)]
            for j, name in enumerate(proxies)}


def compare_gradings(
    people: Mapping[str, Sequence[float]],
    proxies: Mapping[str, Mapping[str, Sequence[float]]],
    *,
    comparisons: Sequence[tuple[str, str]] | None = None,
    higher_is_better: bool = True,
    outer_resamples: int = OUTER_RESAMPLES,
    tau_resamples: int = TAU_RESAMPLES,
    seed: int = 0,
    outer: Mapping[str, Sequence[float]] | None = None,
) -> Decisions:
    """Each proxy's decision agreement with people (see the module).

    Args:
        people: system -> its metric per query under people's grades, over the same queries in the
            same order for every system.
        proxies: proxy name -> the same systems' metric per query under that proxy's grades.
        comparisons: The pairs of systems to give verdicts on, one family (default: every pair).
        higher_is_better: The metric's direction (which side of a difference wins).
        outer_resamples: Bootstrap resamples of the agreement's interval (0: no interval).
        seed: The seed of tau's resamples and of the outer resamples (the point's verdicts follow
            the resample policy of every comparison the app shows: engine/statistics/pairing.py).
        outer: Each proxy's agreement per outer resample as an earlier call with the same inputs
            and seed gave it (``Decisions.outer``, kept): the outer resamples are not run again.

    Raises:
        ValueError: the proxies score other systems or queries than people, non-finite values, or
            comparisons naming an unknown system.
    """
    systems, matrix, rows, n = _check(people, proxies, comparisons or [])
    comparisons = list(comparisons) if comparisons is not None else list(combinations(systems, 2))
    index = {s: i for i, s in enumerate(systems)}
    m = len(comparisons)
    by_proxy: dict[str, DecisionAgreement] = {}
    kept: dict[str, np.ndarray] = {}
    taus = _taus(matrix, rows, tau_resamples, seed)
    enough = m >= 1 and n >= min_queries(m)
    verdicts = _verdicts(matrix, rows, index, comparisons, higher_is_better) if enough else {}
    if outer is not None and set(outer) >= set(rows) and all(len(outer[p]) == outer_resamples for p in rows):
        resampled = {name: np.asarray(outer[name], dtype=float) for name in rows}
    elif enough and outer_resamples > 0:
        resampled = _outer(matrix, rows, index, comparisons, higher_is_better, outer_resamples, seed)
    else:
        resampled = {name: np.empty(0) for name in rows}
    for name, values in rows.items():
        notes = []
        if len(systems) < MIN_TAU_SYSTEMS:
            notes.append(f"Kendall's tau needs at least {MIN_TAU_SYSTEMS} systems to rank; there "
                         f"{'is' if len(systems) == 1 else 'are'} {len(systems)}.")
        if m == 0:
            notes.append("No comparison: decisions need at least 2 systems.")
            agreement = Estimate(None, None, None)
        elif not enough:
            notes.append(f"No verdict from {n} quer{'y' if n == 1 else 'ies'}: a verdict over {m} "
                         f"comparison{'s' if m > 1 else ''} needs at least {min_queries(m)}.")
            agreement = Estimate(None, None, None)
        else:
            share = float(np.mean([v.agrees for v in verdicts[name]]))
            agreement = percentile_estimate(share, resampled[name])
        kept[name] = resampled[name]
        by_proxy[name] = DecisionAgreement(
            systems, n, matrix.mean(axis=1).tolist(), values.mean(axis=1).tolist(), taus[name], agreement,
            verdicts.get(name, []), notes)
    return Decisions(by_proxy, kept)


def _taus(matrix: np.ndarray, rows: dict[str, np.ndarray], resamples: int, seed: int) -> dict[str, Estimate]:
    """Kendall's tau of each proxy's means against people's, with its bootstrap interval."""
    if matrix.shape[0] < MIN_TAU_SYSTEMS:
        return {name: Estimate(None, None, None) for name in rows}
    with one_blas_thread():
        people = resampled_means(matrix, resamples, np.random.default_rng(seed))
        out = {}
        for name, values in rows.items():
            point = float(kendall_tau_b_rows(matrix.mean(axis=1), values.mean(axis=1)))
            proxy = resampled_means(values, resamples, np.random.default_rng(seed))  # the same draw
            out[name] = percentile_estimate(None if np.isnan(point) else point, kendall_tau_b_rows(people, proxy))
    return out


def _outer(matrix: np.ndarray, rows: dict[str, np.ndarray], index: dict[str, int],
           comparisons: Sequence[tuple[str, str]], higher_is_better: bool, resamples: int,
           seed: int) -> dict[str, np.ndarray]:
    """Each proxy's agreement in each outer resample of the queries.

    Every outer resample's verdicts come from the paired procedure with the same seed, so its inner
    resamples are the same draw of positions for every outer resample: several outer resamples go
    into one call (their comparisons are more pairs of the same length, each family still of m),
    which draws once for all of them and gives the very verdicts one call each would.
    """
    from searchgrade.engine.statistics.paired import resamples_for

    rng = np.random.default_rng([seed, 1])
    n = matrix.shape[1]
    m = len(comparisons)
    sides = [matrix, *rows.values()]
    columns = len(sides) * m
    # Outer resamples per call: the resampled means of a call (inner resamples x columns) stay small.
    per_call = max(1, OUTER_CELLS // (resamples_for(m) * columns))
    agree = np.empty((len(rows), resamples))
    for start in range(0, resamples, per_call):
        picks = [rng.integers(0, n, size=n) for _ in range(min(per_call, resamples - start))]
        pairs = [(side[index[a], pick], side[index[b], pick]) for pick in picks for side in sides for a, b in comparisons]
        diffs = paired_differences(pairs, m=m, n_resamples=1, seed=seed)
        for r in range(len(picks)):
            block = diffs[r * columns:(r + 1) * columns]
            people = block[:m]
            for j in range(len(rows)):
                mine = block[(j + 1) * m:(j + 2) * m]
                agree[j, start + r] = np.mean([PairVerdict(a, b, people[i], mine[i], higher_is_better).agrees
                                               for i, (a, b) in enumerate(comparisons)])
    return {name: agree[j] for j, name in enumerate(rows)}


def agreement_difference(decisions: Decisions, first: str, second: str) -> Estimate:
    """first's decision agreement minus second's, with the percentile interval of that difference
    over the shared outer resamples (None where either has no agreement)."""
    a, b = decisions.by_proxy[first].agreement, decisions.by_proxy[second].agreement
    if a.value is None or b.value is None:
        return Estimate(None, None, None)
    return percentile_estimate(a.value - b.value, decisions.outer[first] - decisions.outer[second])
