"""Kendall's tau-b between two rankings of the same systems: do two gradings order them alike?

For systems i < j with scores x and y, a pair is concordant when sign(x_i - x_j) = sign(y_i - y_j)
!= 0 and discordant when the signs are opposite and both non-zero:

    tau_b = (C - D) / sqrt((n0 - n_x) (n0 - n_y))

n0 = S (S - 1) / 2 pairs, n_x and n_y the pairs tied in x and in y. tau_b is 1 when the two orders
agree (ties included: the same ties on both sides give 1), -1 when one reverses the other.
Matches ``scipy.stats.kendalltau`` (its default variant, "b").

Edge cases: fewer than two systems, or every system tied on one side -> None (undefined: there is
no order to agree with). Values within 1e-12 (relative) of each other are ties, so float noise in
a mean never makes an order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Differences within this (times max(1, max |value|)) are ties.
TIE_TOLERANCE = 1e-12


def _signs(values: np.ndarray) -> np.ndarray:
    """sign(v_i - v_j) for i < j, per row of (..., S): an (..., S(S-1)/2) array."""
    i, j = np.triu_indices(values.shape[-1], k=1)
    diff = values[..., i] - values[..., j]
    scale = TIE_TOLERANCE * np.maximum(1.0, np.abs(values).max(axis=-1, keepdims=True))
    return np.where(np.abs(diff) <= scale, 0.0, np.sign(diff))


def kendall_tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """tau_b of each row of x against the same row of y, both (..., S); NaN where undefined."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"x has shape {x.shape} and y {y.shape}: rank the same systems on both sides")
    if x.shape[-1] < 2:
        return np.full(x.shape[:-1], np.nan)
    sx, sy = _signs(x), _signs(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        denominator = np.sqrt((sx * sx).sum(axis=-1) * (sy * sy).sum(axis=-1))
        return np.where(denominator > 0, (sx * sy).sum(axis=-1) / denominator, np.nan)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """tau_b of two scorings of the same systems (see the module); None where undefined.

    Raises:
        ValueError: x and y differ in length.
    """
    if len(x) != len(y):
        raise ValueError(f"x has {len(x)} values and y {len(y)}: score the same systems on both sides")
    value = float(kendall_tau_b_rows(np.asarray(x, dtype=float), np.asarray(y, dtype=float)))
    return None if np.isnan(value) else value
