"""Position bias: how often users look at each position, from the log's own interventions where it
has them, otherwise from a stated default.

A click at position p needs the user to examine p (theta_p) and to find the result attractive
(alpha, the position-based model). From one ranker's log alone the two cannot be told apart: a
result always shown at rank 8 and rarely clicked may be poor, or merely unseen. They can when the
same (query, document) pair was shown at two or more positions: by several rankers or A/B buckets,
by randomised swaps, or by one ranker over time. Its attractiveness is the same wherever it was
shown, so the ratio of its click rates is the ratio of the two positions' examination: a natural
intervention. Harvesting them (Agarwal et al., WSDM 2019, "Estimating Position Bias without
Intrusive Interventions"; Fang et al., SIGIR 2019) gives theta without a randomised experiment.

**The rule.** Two positions are linked when at least ``MIN_INTERVENTIONS`` pairs were each shown
``MIN_SHOWN`` times or more at both. When the links join every position users were shown to
position 1, theta comes from the pairs shown at two or more positions alone, theta_1 = 1 (source
``interventions``): how each pair's clicks divide among its positions, given how often it was
shown at each, is theta's share there, whatever the pair's attractiveness (``_solve``). Otherwise theta_p = 1 / p (``DEFAULT_ETA`` = 1: the examination curve eye-tracking
and swap experiments on web search most often report, Joachims et al. 2005/2017), and the reason
says which positions no intervention joins: source ``default``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from searchgrade.engine.clicks.models import ClickCounts

#: The default examination curve: theta_p = 1 / p**DEFAULT_ETA.
DEFAULT_ETA = 1.0
#: Pairs shown at both of two positions that link them.
MIN_INTERVENTIONS = 10
#: Impressions a pair needs at a position for that position to count as one it was shown at.
MIN_SHOWN = 10


@dataclass(frozen=True)
class PositionBias:
    """Examination per position (``theta[p]`` for position p, ``theta[1]`` = 1, index 0 unused)."""

    theta: np.ndarray
    #: "interventions" (estimated from the log) or "default" (1 / p).
    source: str
    #: Intervention pairs the estimate rests on (0 for the default).
    pairs: int
    #: Why this source, in words.
    reason: str

    def words(self, positions: int = 5) -> str:
        """ "position bias from 1,204 intervention pairs: 1, 0.62, 0.47, 0.38, 0.32, ..." """
        shown = ", ".join(f"{t:.2f}" for t in self.theta[1:positions + 1])
        more = ", ..." if len(self.theta) > positions + 1 else ""
        return f"examination by position {shown}{more} ({self.reason})"

    def to_json(self) -> dict[str, object]:
        return {"source": self.source, "pairs": self.pairs, "reason": self.reason,
                "theta": [float(t) for t in self.theta[1:]]}


def default_theta(top: int, eta: float = DEFAULT_ETA) -> np.ndarray:
    """theta[p] = 1 / p**eta for p = 1..top (index 0 holds 1.0, unused)."""
    positions = np.arange(top + 1, dtype=float)
    positions[0] = 1.0
    return positions ** -eta


def linked_positions(counts: ClickCounts, min_shown: int = MIN_SHOWN,
                     min_pairs: int = MIN_INTERVENTIONS) -> tuple[np.ndarray, np.ndarray]:
    """(links, pairs): ``links[p, q]`` counts the pairs shown ``min_shown`` times or more at both p
    and q; ``pairs`` marks those shown so at two or more positions (the intervention pairs)."""
    top = int(counts.position.max()) if counts.position.size else 1
    enough = counts.impressions >= min_shown
    indicator = np.zeros((counts.n_pairs, top + 1), dtype=np.int32)
    indicator[counts.pair[enough], counts.position[enough]] = 1
    several = indicator.sum(axis=1) >= 2
    chosen = indicator[several]
    links = chosen.T @ chosen
    np.fill_diagonal(links, 0)
    return links, several


def _connected_to_first(links: np.ndarray, min_pairs: int) -> set[int]:
    reached, frontier = {1}, [1]
    while frontier:
        p = frontier.pop()
        for q in np.flatnonzero(links[p] >= min_pairs).tolist():
            if q not in reached:
                reached.add(q)
                frontier.append(q)
    return reached


def _spans(positions: list[int]) -> str:
    """[3, 4, 5, 9] -> "3-5, 9"."""
    out, start = [], None
    for i, p in enumerate(positions):
        if start is None:
            start = p
        if i + 1 == len(positions) or positions[i + 1] != p + 1:
            out.append(f"{start}" if start == p else f"{start}-{p}")
            start = None
    return ", ".join(out)


def position_bias(counts: ClickCounts, *, min_shown: int = MIN_SHOWN,
                  min_pairs: int = MIN_INTERVENTIONS) -> PositionBias:
    """Theta from the log's interventions when they join every position shown to position 1, else
    the default 1 / p (see the module)."""
    top = int(counts.position.max()) if counts.position.size else 1
    shown = sorted(set(np.unique(counts.position[counts.impressions > 0]).tolist()))
    links, several = linked_positions(counts, min_shown, min_pairs)
    n_pairs = int(several.sum())
    reached = _connected_to_first(links, min_pairs)
    unreached = [p for p in shown if p not in reached]
    if len(shown) <= 1:
        return PositionBias(default_theta(top), "default", 0, "one position shown: nothing to estimate")
    if unreached:
        why = ("the default 1/p: the log shows no pair at two positions often enough to estimate it"
               if n_pairs < min_pairs else
               f"the default 1/p: no {min_pairs} pairs shown at position{'s' if len(unreached) > 1 else ''} "
               f"{_spans(unreached)} and at another position joined to position 1")
        return PositionBias(default_theta(top), "default", 0, why)
    return PositionBias(_solve(counts, several, top), "interventions", n_pairs,
                        f"estimated from {n_pairs:,} pairs shown at two or more positions")


def _solve(counts: ClickCounts, several: np.ndarray, top: int, iterations: int = 10_000,
           tol: float = 1e-9) -> np.ndarray:
    """theta per position (index p; 1 at positions 0 and 1) from the intervention pairs' rows.

    Given its clicks C_d, a pair's clicks fall on its positions in proportion to n_dk theta_k (its
    attractiveness cancels: E[c_dk] = n_dk theta_k alpha_d). The estimating equations
    sum_d (c_dk - C_d n_dk theta_k / S_d) = 0, S_d = sum_j n_dj theta_j, are unbiased, so their root
    is consistent however few impressions each pair has (fitting an attractiveness per pair
    alongside theta is not: the incidental-parameter bias). Solved by the minorise-maximise
    iteration theta_k <- sum_d c_dk / sum_d (C_d n_dk / S_d), theta_1 = 1.
    """
    rows = several[counts.pair] & (counts.impressions > 0)
    pair, pos = counts.pair[rows], counts.position[rows]
    n, c = counts.impressions[rows], counts.clicks[rows]
    clicks_of_pair = np.bincount(pair, weights=c, minlength=counts.n_pairs)
    clicked = np.bincount(pos, weights=c, minlength=top + 1)
    theta = np.ones(top + 1)
    for _ in range(iterations):
        total = np.bincount(pair, weights=n * theta[pos], minlength=counts.n_pairs)
        expected = np.bincount(pos, weights=clicks_of_pair[pair] * n / np.maximum(total[pair], 1e-300),
                               minlength=top + 1)
        new = np.where(expected > 0, clicked / np.maximum(expected, 1e-300), theta)
        new = new / new[1] if new[1] > 0 else new
        new[0] = 1.0
        change = np.abs(new - theta).max()
        theta = new
        if change < tol:
            break
    return theta
