"""Click models: from impressions and clicks per (query, document, position) to a relevance
estimate per (query, document), and from that to a grade on the judge's 0-3 scale.

Pure numpy. Every model gives the same quantity, the probability that the document is clicked
when shown at rank 1, so one set of cut-points grades them all (engine/clicks/grading.py, with the
position bias of engine/clicks/position_bias.py and the cut-points of engine/clicks/thresholds.py):

- ``ctr``: raw click-through rate, clicks / impressions. It ignores position bias (a result shown
  at rank 8 is clicked less because fewer people look there), which is why it is the baseline.
- ``coec``: clicks over expected clicks. Each impression at position p expects ctr_p clicks, the
  click-through rate of position p over the whole log; COEC = clicks / sum of expected clicks
  (1: clicked as often as an average result where it was shown), times ctr_1 to put it on the
  rank-1 scale (Zhang & Jones 2007; OpenSearch's implicit judgments use COEC too).
- ``pbm``: the position-based model (Craswell et al. 2008; Chuklin, Markov & de Rijke 2015, ch. 3):
  a click happens when the position is examined (theta_p) and the document is attractive
  (alpha_qd), independently; fitted by expectation-maximisation on the aggregated counts, with
  theta_1 = 1 so alpha_qd is the rank-1 click probability. A weak Beta prior (2 pseudo-impressions
  at the mean attractiveness) keeps a pair seen a few times from an extreme estimate. Theta is
  fitted with alpha, or given (``fit_pbm(..., theta=...)``): from one ranker's log alone the two
  cannot be told apart, so grading passes the theta position_bias.py found.

No well-kept click-model library fits here (PyClick is not on PyPI and dates from Python 2,
``clickmodels`` from 2014, pyClickModels is a 2021 release candidate, CLAX needs JAX): these are
small, and checked against a simulator with known parameters (engine/clicks/simulation.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

PRIOR_IMPRESSIONS = 2.0


@dataclass(frozen=True)
class ClickCounts:
    """Aggregated click stats: one row per (pair, position)."""

    #: Pair index of each row (0..n_pairs-1).
    pair: np.ndarray
    #: 1-based position of each row.
    position: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray
    n_pairs: int

    @classmethod
    def of(cls, pair: Sequence[int], position: Sequence[int], impressions: Sequence[float],
           clicks: Sequence[float], n_pairs: int | None = None) -> ClickCounts:
        p = np.asarray(pair, dtype=int)
        pos = np.asarray(position, dtype=int)
        n = np.asarray(impressions, dtype=float)
        c = np.asarray(clicks, dtype=float)
        if not (p.shape == pos.shape == n.shape == c.shape):
            raise ValueError("pair, position, impressions and clicks need one value per row")
        if p.size and (pos.min() < 1 or (n < 0).any() or (c < 0).any() or (c > n).any()):
            raise ValueError("positions count from 1, and 0 <= clicks <= impressions on every row")
        return cls(p, pos, n, c, int(n_pairs if n_pairs is not None else (p.max() + 1 if p.size else 0)))

    def per_pair(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.pair, weights=values, minlength=self.n_pairs)

    def position_ctr(self) -> np.ndarray:
        """Click-through rate by position (index p for position p; index 0 unused)."""
        top = int(self.position.max()) if self.position.size else 1
        shown = np.bincount(self.position, weights=self.impressions, minlength=top + 1)
        clicked = np.bincount(self.position, weights=self.clicks, minlength=top + 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(shown > 0, clicked / np.maximum(shown, 1e-300), 0.0)


def ctr(counts: ClickCounts) -> np.ndarray:
    """clicks / impressions per pair."""
    shown = counts.per_pair(counts.impressions)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(shown > 0, counts.per_pair(counts.clicks) / np.maximum(shown, 1e-300), 0.0)


def coec(counts: ClickCounts) -> np.ndarray:
    """clicks / expected clicks per pair, on the rank-1 scale (times ctr_1), at most 1."""
    by_position = counts.position_ctr()
    expected = counts.per_pair(counts.impressions * by_position[counts.position])
    ratio = np.where(expected > 0, counts.per_pair(counts.clicks) / np.maximum(expected, 1e-300), 0.0)
    return np.minimum(1.0, ratio * by_position[1] if by_position.size > 1 else ratio)


def pbm(counts: ClickCounts, iterations: int = 3000, tol: float = 1e-6) -> np.ndarray:
    """The position-based model's attractiveness per pair (theta_1 = 1), fitted by EM."""
    return fit_pbm(counts, iterations, tol)[0]


def fit_pbm(counts: ClickCounts, iterations: int = 3000, tol: float = 1e-6, *, prior: float = PRIOR_IMPRESSIONS,
            theta: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(alpha per pair, theta per position with theta[p] for position p and theta[1] = 1), by EM.

    E-step on a row's non-clicks: P(examined | no click) = theta (1 - alpha) / (1 - theta alpha),
    P(attractive | no click) = alpha (1 - theta) / (1 - theta alpha); clicks are examined and
    attractive. M-step: each alpha is its expected attractive impressions over its impressions (with
    ``prior`` pseudo-impressions at the mean attractiveness; 0: maximum likelihood), each theta its
    expected examined impressions over its impressions. A ``theta`` given (index p for position p,
    theta[1] = 1) is kept fixed: only the attractiveness is fitted.
    """
    n, c, pos = counts.impressions, counts.clicks, counts.position
    top = int(pos.max()) if pos.size else 1
    fixed = theta is not None
    if theta is None:
        by_position = counts.position_ctr()
        theta = np.clip(by_position / max(by_position[1], 1e-9), 0.01, 1.0)
        theta[0] = 1.0
    else:
        if len(theta) < top + 1:
            raise ValueError(f"theta has {len(theta) - 1} positions and the clicks reach position {top}")
        theta = np.asarray(theta, dtype=float).copy()
    alpha = np.full(counts.n_pairs, 0.5)
    shown_pair = counts.per_pair(n)
    shown_pos = np.bincount(pos, weights=n, minlength=top + 1)
    missed = n - c
    for _ in range(iterations):
        a, t = alpha[counts.pair], theta[pos]
        denom = np.maximum(1.0 - t * a, 1e-12)
        attractive = c + missed * a * (1.0 - t) / denom
        prior_mean = float(np.average(alpha, weights=shown_pair)) if shown_pair.sum() > 0 else 0.5
        new_alpha = (counts.per_pair(attractive) + prior * prior_mean) / np.maximum(shown_pair + prior, 1e-300)
        change = np.abs(new_alpha - alpha).max(initial=0.0)
        if not fixed:
            examined = c + missed * t * (1.0 - a) / denom
            new_theta = np.where(shown_pos > 0, np.bincount(pos, weights=examined, minlength=top + 1)
                                 / np.maximum(shown_pos, 1e-300), theta[: top + 1])
            new_theta[0] = 1.0
            change = max(change, np.abs(new_theta - theta[: top + 1]).max(initial=0.0))
            theta = np.clip(new_theta, 1e-6, 1.0)
        alpha = np.clip(new_alpha, 1e-6, 1 - 1e-6)
        if change < tol:
            break
    scale = theta[1] if top >= 1 else 1.0
    return np.minimum(1.0, alpha * scale), theta / scale


#: Click models by name, the default first: counts -> rank-1 click probability per pair.
CLICK_MODELS: dict[str, Callable[[ClickCounts], np.ndarray]] = {"pbm": pbm, "coec": coec, "ctr": ctr}
#: What each model is, in a few words (the CLI's help, the app's picker).
MODEL_LABELS = {"pbm": "position-based model fitted by EM (the default)",
                "coec": "COEC: clicks over expected clicks at each position",
                "ctr": "raw click-through rate (ignores position bias: a baseline)"}
