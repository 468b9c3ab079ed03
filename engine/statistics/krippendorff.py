"""Krippendorff's alpha: agreement between any number of raters, with missing ratings.

With units u (here: a (query, document) pair) each rated by m_u >= 2 raters, the coincidence
matrix counts every ordered pair of values within a unit, weighted 1 / (m_u - 1):

    o_ck = sum_u (number of ordered (c, k) value pairs in u) / (m_u - 1),  n_c = sum_k o_ck,  n = sum_c n_c

and alpha = 1 - D_o / D_e = 1 - (n - 1) * sum_ck o_ck d2_ck / sum_ck n_c n_k d2_ck, with the
distance d2 of the level of measurement:

- nominal: 0 if c == k else 1;  interval: (c - k)^2;
- ordinal: (sum of n_g for g from c to k  -  (n_c + n_k) / 2)^2, so a step between two grades
  people use often counts more than one between rare grades (Krippendorff 2011, "Computing
  Krippendorff's Alpha-Reliability").

alpha = 1 is perfect agreement, 0 is what chance gives, below 0 systematic disagreement. Units
rated by fewer than two raters carry no information about agreement and are left out. Edge case:
every pairable rating the same value (D_e = 0) -> None, undefined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

LEVELS = ("nominal", "ordinal", "interval")


class AlphaEstimate(NamedTuple):
    alpha: float | None
    ci_low: float | None
    ci_high: float | None
    #: Units rated by two or more raters.
    n_units: int
    #: Pairable ratings in them.
    n_ratings: int


def _unit_coincidences(units: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """The values seen, and one flattened coincidence matrix per pairable unit."""
    pairable = [list(u) for u in units if len(u) >= 2]
    values = np.array(sorted({v for u in pairable for v in u}), dtype=float)
    index = {v: i for i, v in enumerate(values)}
    size = len(values)
    per_unit = np.zeros((len(pairable), size * size))
    for row, unit in enumerate(pairable):
        counts = np.bincount([index[v] for v in unit], minlength=size).astype(float)
        matrix = (np.outer(counts, counts) - np.diag(counts)) / (len(unit) - 1)
        per_unit[row] = matrix.ravel()
    return values, per_unit


def _distances(values: np.ndarray, n_c: np.ndarray, level: str) -> np.ndarray:
    """d2 per (c, k); for ordinal, n_c are the marginals the distance depends on (rows: resamples)."""
    c, k = np.meshgrid(values, values, indexing="ij")
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    # ordinal: cumulative marginals between c and k, minus half of the two ends
    cum = np.cumsum(n_c, axis=-1)
    i, j = np.meshgrid(np.arange(len(values)), np.arange(len(values)), indexing="ij")
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    before_lo = np.where(lo > 0, np.take(cum, np.maximum(lo - 1, 0), axis=-1), 0.0)
    between = np.take(cum, hi, axis=-1) - before_lo
    return (between - (np.take(n_c, i, axis=-1) + np.take(n_c, j, axis=-1)) / 2) ** 2


def _alpha_from(o: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """alpha for coincidence matrices o of shape (..., V, V); NaN where undefined."""
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    d2 = _distances(values, n_c, level)
    observed = (o * d2).sum(axis=(-2, -1))
    expected = (n_c[..., :, None] * n_c[..., None, :] * d2).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def krippendorff_alpha(units: Sequence[Sequence[float]], level: str = "ordinal", *,
                       n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> AlphaEstimate:
    """Krippendorff's alpha over units, each the list of values its raters gave (missing ones left out).

    The CI resamples the pairable units with replacement (percentile bootstrap, seeded).

    Raises:
        ValueError: an unknown level, or confidence outside (0, 1).
    """
    if level not in LEVELS:
        raise ValueError(f"level {level!r} is not one of {LEVELS}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence of {confidence} is not in (0, 1): use e.g. 0.95")
    values, per_unit = _unit_coincidences(units)
    n_units = len(per_unit)
    n_ratings = sum(len(u) for u in units if len(u) >= 2)
    if n_units == 0 or len(values) < 2:
        return AlphaEstimate(None, None, None, n_units, n_ratings)
    size = len(values)
    alpha = float(_alpha_from(per_unit.sum(axis=0).reshape(size, size), values, level))
    if np.isnan(alpha):
        return AlphaEstimate(None, None, None, n_units, n_ratings)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_resamples)
    resampled = _alpha_from((weights @ per_unit).reshape(-1, size, size), values, level)
    resampled = resampled[np.isfinite(resampled)]
    if len(resampled) == 0:
        return AlphaEstimate(alpha, None, None, n_units, n_ratings)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(resampled, [tail, 100 - tail])
    return AlphaEstimate(alpha, float(low), float(high), n_units, n_ratings)
