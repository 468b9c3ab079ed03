"""Percentile bootstrap confidence intervals of a mean over per-query values.

Pure numpy, vectorised, seeded: the same inputs and seed give the same numbers.

``bootstrap_ci`` treats one column. ``bootstrap_cis`` treats many at once with the very same
resamples (a generator seeded alike, drawn alike): the resample index matrix is drawn once per
number of queries and every column's resampled means come from it through one matrix product, so
a run's hundreds of (strategy, metric, k) columns cost one draw instead of one each. The paired
differences (engine/statistics/paired.py) resample the same way (resampling.resampled_means).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from searchgrade.engine.statistics.resampling import (
    as_values,
    by_length,
    check_resampling,
    chunks,
    one_blas_thread,
    resampled_means,
)


class Interval(NamedTuple):
    """A mean and its confidence interval."""

    mean: float
    low: float
    high: float


def percentile_interval(
    values: np.ndarray, confidence: float, n_resamples: int, rng: np.random.Generator
) -> Interval:
    """``bootstrap_ci`` of checked values, under the resamples ``rng`` draws."""
    mean = float(values.mean())
    n = len(values)
    if n == 1:
        return Interval(mean, mean, mean)
    means = np.concatenate(
        [
            values[rng.integers(0, n, size=(rows, n))].mean(axis=1)
            for rows in chunks(n_resamples, n)
        ]
    )
    alpha = 1 - confidence
    low, high = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return Interval(mean, float(low), float(high))


def bootstrap_ci(
    values: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap confidence interval of the mean.

    Resamples the values with replacement n_resamples times and takes the (1 - confidence) / 2 and
    (1 + confidence) / 2 percentiles of the resampled means.
    Edge cases: one value -> low = high = mean.

    Raises:
        ValueError: no values, NaN or infinite values, confidence outside (0, 1),
            or n_resamples < 1.
    """
    array = as_values(values, "values")
    if array.size == 0:
        raise ValueError("values is empty: a confidence interval needs at least one value")
    check_resampling(confidence, n_resamples)
    return percentile_interval(array, confidence, n_resamples, np.random.default_rng(seed))


def _as_columns(columns: Sequence[Sequence[float]], name: str) -> list[np.ndarray]:
    arrays = [as_values(c, f"{name}[{i}]") for i, c in enumerate(columns)]
    for i, array in enumerate(arrays):
        if array.size == 0:
            raise ValueError(f"{name}[{i}] is empty: a confidence interval needs at least one value")
    return arrays


def percentile_intervals(matrix: np.ndarray, confidence: float, n_resamples: int,
                         rng: np.random.Generator) -> list[Interval]:
    """Each row's mean and percentile bootstrap interval, all rows under the same resamples."""
    centre = matrix.mean(axis=1)
    if matrix.shape[1] == 1:
        return [Interval(float(m), float(m), float(m)) for m in centre]
    alpha = 1 - confidence
    low, high = np.percentile(resampled_means(matrix, n_resamples, rng),
                              [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    out = []
    for row, mean, lo, hi in zip(matrix, centre, low, high, strict=True):
        if (row == row[0]).all():
            # Every resample of a constant column is that constant: no rounding noise around it.
            out.append(Interval(float(mean), float(mean), float(mean)))
        else:
            out.append(Interval(float(mean), float(lo), float(hi)))
    return out


def bootstrap_cis(
    columns: Sequence[Sequence[float]],
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> list[Interval]:
    """``bootstrap_ci`` of each column, drawing the resample index matrix once per column length.

    Every column of one length is resampled with the same index matrix, the one ``bootstrap_ci``
    draws for that length and seed, so each interval equals ``bootstrap_ci(column, confidence,
    n_resamples, seed)`` up to the order in which the resampled means are summed (~1e-16).

    Raises:
        ValueError: a column is empty or holds NaN or infinite values, confidence is outside
            (0, 1), or n_resamples < 1.
    """
    arrays = _as_columns(columns, "columns")
    check_resampling(confidence, n_resamples)
    out: list[Interval | None] = [None] * len(arrays)
    with one_blas_thread():
        _fill_intervals(arrays, out, confidence, n_resamples, seed)
    return out  # type: ignore[return-value]


def _fill_intervals(arrays: list[np.ndarray], out: list[Interval | None], confidence: float,
                    n_resamples: int, seed: int) -> None:
    for indices in by_length(arrays).values():
        matrix = np.stack([arrays[i] for i in indices])
        intervals = percentile_intervals(matrix, confidence, n_resamples, np.random.default_rng(seed))
        for i, interval in zip(indices, intervals, strict=True):
            out[i] = interval
