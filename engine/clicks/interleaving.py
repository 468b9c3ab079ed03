"""Team-draft interleaving: which of two systems people prefer, from searches that showed both.

Team-draft interleaving (Radlinski, Kurup & Joachims, CIKM 2008) merges two rankings by turns: at
each pick the team with fewer documents so far (a coin decides a tie) adds its best document not
yet shown, and a click credits the team whose document it was. Both systems are shown to the same
people on the same searches, at positions neither chose alone, so a preference is free of the
position bias and of the holes that make click judgments favour the logged system. A search is won
by the system its clicks credit more, tied when they credit both equally, and says nothing when it
has no click (Chapelle, Joachims, Radlinski & Yue, TOIS 2012).

**The comparison.** Per query, the share of its searches with a click that A won, and the share B
won (a tie counts for neither). A against B is the mean over the queries (every query once, as
every figure here) of A's share minus B's, with the interval and verdict of the one paired procedure
and resample policy (engine/statistics/pairing.py's ``differences``) over those queries; the pairs of
systems of one log are one family.
Beside it, the share of all decided searches A won (wins / (wins + losses)), the figure interleaving
studies usually quote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from searchgrade.engine.statistics.paired import PairedDifference, interval_words
from searchgrade.engine.statistics.pairing import differences


def team_draft(a: Sequence[str], b: Sequence[str], rng: np.random.Generator,
               k: int = 10) -> tuple[list[str], list[int]]:
    """The interleaved top k of rankings a and b, and each document's team (0: a, 1: b)."""
    shown: list[str] = []
    teams: list[int] = []
    seen: set[str] = set()
    picks = [0, 0]
    cursor = [0, 0]
    lists = (list(a), list(b))
    while len(shown) < k:
        team = int(rng.integers(2)) if picks[0] == picks[1] else (0 if picks[0] < picks[1] else 1)
        ranking = lists[team]
        while cursor[team] < len(ranking) and ranking[cursor[team]] in seen:
            cursor[team] += 1
        if cursor[team] >= len(ranking):
            other = 1 - team
            ranking = lists[other]
            while cursor[other] < len(ranking) and ranking[cursor[other]] in seen:
                cursor[other] += 1
            if cursor[other] >= len(ranking):
                break
            team = other
        doc = lists[team][cursor[team]]
        seen.add(doc)
        shown.append(doc)
        teams.append(team)
        picks[team] += 1
    return shown, teams


@dataclass(frozen=True)
class QueryOutcome:
    """One query's interleaved searches of systems a and b."""

    query: str
    system_a: str
    system_b: str
    wins_a: int
    wins_b: int
    ties: int
    #: Every interleaved search of the query, those without a click included.
    searches: int


@dataclass(frozen=True)
class InterleavingComparison:
    """System a against system b over their interleaved searches."""

    system_a: str
    system_b: str
    #: Queries with a decided or tied search (the ones compared), and every interleaved search.
    queries: int
    searches: int
    wins_a: int
    wins_b: int
    ties: int
    #: mean over queries of (a's share - b's share) of its searches with a click.
    difference: PairedDifference

    @property
    def share_a(self) -> float:
        """Of the decided searches, the share a won (0.5: no preference; NaN: none decided)."""
        decided = self.wins_a + self.wins_b
        return self.wins_a / decided if decided else float("nan")

    @property
    def verdict(self) -> str:
        d = self.difference
        if not d.estimable:
            return "too few queries for a verdict"
        if not d.significant:
            return "not distinguishable"
        return f"{self.system_a if d.diff > 0 else self.system_b} preferred"

    def sentence(self) -> str:
        d = self.difference
        figures = interval_words(d)
        lead = (f"{self.system_a} wins {self.wins_a:,} and {self.system_b} {self.wins_b:,} of "
                f"{self.wins_a + self.wins_b + self.ties:,} interleaved searches with a click ({self.ties:,} tied) "
                f"over {self.queries:,} queries")
        if not d.estimable:
            return f"{lead}: {figures}."
        gap = f"{d.diff:+.3f} share of searches won ({figures})"
        if d.significant:
            winner = self.system_a if d.diff > 0 else self.system_b
            return f"{lead}: people prefer {winner}, {gap}."
        return f"{lead}: not distinguishable, {gap}; the gap could be noise."

    def to_json(self) -> dict[str, object]:
        d = self.difference
        def number(x: float) -> float | None:
            return None if x != x else x
        return {"a": self.system_a, "b": self.system_b, "queries": self.queries, "searches": self.searches,
                "wins_a": self.wins_a, "wins_b": self.wins_b, "ties": self.ties, "share_a": number(self.share_a),
                "diff": d.diff, "ci_low": number(d.ci_low), "ci_high": number(d.ci_high), "p_value": d.p_value,
                "comparisons": d.m, "significant": d.significant, "verdict": self.verdict}


def compare_interleaved(outcomes: Sequence[QueryOutcome]) -> list[InterleavingComparison]:
    """Each pair of systems' comparison (see the module), the pairs of the log as one family, in
    the order the pairs first appear. A pair is kept as its first appearance orders it (a query
    logged as (b, a) counts for (a, b) with the wins swapped)."""
    by_pair: dict[tuple[str, str], dict[str, list[int]]] = {}
    for o in outcomes:
        key, flip = ((o.system_a, o.system_b), False)
        if (o.system_b, o.system_a) in by_pair:
            key, flip = (o.system_b, o.system_a), True
        rows = by_pair.setdefault(key, {})
        a, b = (o.wins_b, o.wins_a) if flip else (o.wins_a, o.wins_b)
        cell = rows.setdefault(o.query, [0, 0, 0, 0])
        cell[0] += a
        cell[1] += b
        cell[2] += o.ties
        cell[3] += o.searches
    columns, kept = [], []
    for pair, rows in by_pair.items():
        cells = np.array([v for v in rows.values() if v[0] + v[1] + v[2] > 0], dtype=float).reshape(-1, 4)
        if not len(cells):
            continue
        clicked = cells[:, 0] + cells[:, 1] + cells[:, 2]
        columns.append((cells[:, 0] / clicked, cells[:, 1] / clicked))
        totals = np.array(list(rows.values()), dtype=int).sum(axis=0)
        kept.append((pair, len(cells), int(totals[3]), int(totals[0]), int(totals[1]), int(totals[2])))
    if not kept:
        return []
    tests = differences(columns)
    return [InterleavingComparison(a, b, n, searches, wa, wb, ties, d)
            for ((a, b), n, searches, wa, wb, ties), d in zip(kept, tests, strict=True)]
