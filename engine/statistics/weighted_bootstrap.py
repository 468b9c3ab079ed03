"""The traffic-weighted mean of per-query values and its percentile bootstrap interval.

Pure numpy, vectorised, seeded. A query set sampled from a log gives each query a design weight
(its searches over its inclusion probability: engine/traffic/sampling.py); the traffic-weighted
mean is the ratio sum(w * x) / sum(w), what the average *search* experiences, where the plain mean
(engine/statistics/bootstrap.py) is what the average *query* does.

The interval resamples the queries the way they were drawn: with replacement within each stratum
(the band, for a stratified set), as many as the stratum holds, and never the fixed ones (taken for
certain, pi = 1: every draw of the set holds them), then takes the ratio of each resample. Every
column (a strategy, metric and cut-off) is estimated under the same resamples: one count matrix per
block of resamples, and each column's numerator and denominator from one matrix product. A value
that is NaN (the strategy failed on the query, or the metric has no value there) has weight 0 in its
column: the ratio is over the queries that have one.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from searchgrade.engine.statistics.bootstrap import Interval
from searchgrade.engine.statistics.resampling import BLOCK_CELLS, check_resampling, one_blas_thread


def _check(columns: Sequence[Sequence[float]], weights: Sequence[float], strata: Sequence[Hashable] | None,
           fixed: Sequence[bool] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    w = np.asarray(weights, dtype=float)
    if w.ndim != 1 or w.size == 0:
        raise ValueError("weights must be a non-empty flat sequence, one per query")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite and non-negative")
    values = np.asarray(columns, dtype=float)
    if values.ndim == 1:
        values = values[None, :]
    if values.ndim != 2 or values.shape[1] != w.size:
        raise ValueError(f"each column needs one value per query ({w.size}); got shape {values.shape}")
    if np.isinf(values).any():
        raise ValueError("columns hold infinite values: drop or fix them first")
    labels = list(strata) if strata is not None else [0] * w.size
    if len(labels) != w.size:
        raise ValueError(f"strata needs one label per query ({w.size}); got {len(labels)}")
    _, codes = np.unique(np.asarray([str(s) for s in labels]), return_inverse=True)
    still = np.asarray(fixed if fixed is not None else np.zeros(w.size, dtype=bool), dtype=bool)
    if still.shape != w.shape:
        raise ValueError(f"fixed needs one flag per query ({w.size}); got {still.size}")
    return values, w, codes, still


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    """sum(w * x) / sum(w) over the values that are not NaN; NaN when their weights sum to 0."""
    x = np.asarray(values, dtype=float)
    w = np.where(np.isnan(x), 0.0, np.asarray(weights, dtype=float))
    total = w.sum()
    return float((w * np.nan_to_num(x)).sum() / total) if total > 0 else float("nan")


def _counts(codes: np.ndarray, fixed: np.ndarray, block: int, rng: np.random.Generator) -> np.ndarray:
    """(block, n) draw counts: each stratum's free queries resampled with replacement, fixed ones 1."""
    n = codes.size
    counts = np.zeros((block, n))
    counts[:, fixed] = 1.0
    offsets = (np.arange(block) * n)[:, None]
    for code in np.unique(codes):
        members = np.flatnonzero((codes == code) & ~fixed)
        if members.size == 0:
            continue
        draws = members[rng.integers(0, members.size, size=(block, members.size))] + offsets
        counts += np.bincount(draws.ravel(), minlength=block * n).reshape(block, n)
    return counts


def weighted_bootstrap_cis(
    columns: Sequence[Sequence[float]],
    weights: Sequence[float],
    strata: Sequence[Hashable] | None = None,
    fixed: Sequence[bool] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> list[Interval]:
    """Each column's traffic-weighted mean with its percentile bootstrap interval.

    Args:
        columns: Per-query values, one row per column, one value per query (NaN: no value).
        weights: Each query's design weight (searches / inclusion probability).
        strata: Each query's stratum; resampled within it (None: one stratum).
        fixed: Queries taken for certain: in every resample once, never resampled.

    Edge cases: a column whose free queries are all NaN (or with no free query at all) -> its
    interval is the mean itself; a column with no value at all -> NaN throughout.

    Raises:
        ValueError: empty or mismatched inputs, negative or infinite weights, infinite values,
            confidence outside (0, 1), or n_resamples < 1.
    """
    values, w, codes, still = _check(columns, weights, strata, fixed)
    check_resampling(confidence, n_resamples)
    present = ~np.isnan(values)
    cw = np.where(present, w[None, :], 0.0)  # (cols, n)
    cwx = cw * np.nan_to_num(values)
    point_den = cw.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = cwx.sum(axis=1) / point_den
    if still.all():
        return [Interval(float(m), float(m), float(m)) for m in point]
    rng = np.random.default_rng(seed)
    n = w.size
    rows = max(1, BLOCK_CELLS // n)
    estimates = np.empty((n_resamples, values.shape[0]))
    with one_blas_thread():
        for start in range(0, n_resamples, rows):
            block = min(rows, n_resamples - start)
            counts = _counts(codes, still, block, rng)
            with np.errstate(invalid="ignore", divide="ignore"):
                estimates[start:start + block] = (counts @ cwx.T) / (counts @ cw.T)
    alpha = 1 - confidence
    out = []
    for j, mean in enumerate(point):
        if not np.isfinite(mean):
            out.append(Interval(float("nan"), float("nan"), float("nan")))
            continue
        col = estimates[:, j]
        col = col[np.isfinite(col)]
        row = values[j][present[j]]
        if col.size == 0 or (row == row[0]).all():
            out.append(Interval(float(mean), float(mean), float(mean)))
            continue
        low, high = np.percentile(col, [100 * alpha / 2, 100 * (1 - alpha / 2)])
        out.append(Interval(float(mean), float(low), float(high)))
    return out


def weighted_bootstrap_ci(values: Sequence[float], weights: Sequence[float],
                          strata: Sequence[Hashable] | None = None, fixed: Sequence[bool] | None = None,
                          confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0) -> Interval:
    """``weighted_bootstrap_cis`` of one column."""
    return weighted_bootstrap_cis([values], weights, strata, fixed, confidence, n_resamples, seed)[0]
