"""Confidence intervals and paired significance tests over per-query metric values.

Pure numpy, vectorised, seeded: the same inputs and seed give the same numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

#: Largest resample matrix held at once (rows x queries), so a run with many queries stays small.
_MAX_CELLS = 2_000_000


class Interval(NamedTuple):
    """A mean and its confidence interval."""

    mean: float
    low: float
    high: float


class PairedTest(NamedTuple):
    """A paired comparison of two systems over the same queries."""

    #: mean(a - b)
    diff: float
    ci_low: float
    ci_high: float
    #: Two-sided p-value of the sign-flip randomization test.
    p_value: float
    #: Number of queries.
    n: int


def _as_values(values: Sequence[float], name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds NaN or infinite values: drop or fix them first")
    return array


def _check_resampling(confidence: float, n_resamples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence of {confidence} is not in (0, 1): use e.g. 0.95")
    if n_resamples < 1:
        raise ValueError(f"n_resamples of {n_resamples} is not positive: use e.g. 10_000")


def _chunks(n_resamples: int, n: int) -> list[int]:
    rows = max(1, _MAX_CELLS // max(n, 1))
    return [min(rows, n_resamples - start) for start in range(0, n_resamples, rows)]


def _bootstrap_interval(
    values: np.ndarray, confidence: float, n_resamples: int, rng: np.random.Generator
) -> Interval:
    mean = float(values.mean())
    n = len(values)
    if n == 1:
        return Interval(mean, mean, mean)
    means = np.concatenate(
        [
            values[rng.integers(0, n, size=(rows, n))].mean(axis=1)
            for rows in _chunks(n_resamples, n)
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
    array = _as_values(values, "values")
    if array.size == 0:
        raise ValueError("values is empty: a confidence interval needs at least one value")
    _check_resampling(confidence, n_resamples)
    return _bootstrap_interval(array, confidence, n_resamples, np.random.default_rng(seed))


def _sign_flip_p_value(diffs: np.ndarray, n_resamples: int, rng: np.random.Generator) -> float:
    n = len(diffs)
    # Compare sums, with a tolerance so that float noise does not decide ties.
    observed = abs(diffs.sum())
    tolerance = 1e-9 * max(1.0, float(np.abs(diffs).sum()))
    if 2**n <= n_resamples:
        # Few queries: enumerate every sign assignment, which gives the exact p-value.
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        return float(np.mean(np.abs(signs @ diffs) >= observed - tolerance))
    extreme = 0
    for rows in _chunks(n_resamples, n):
        signs = rng.choice(np.array([1.0, -1.0]), size=(rows, n))
        extreme += int(np.count_nonzero(np.abs(signs @ diffs) >= observed - tolerance))
    # The observed assignment counts as one of the resamples, so p is never 0.
    return (extreme + 1) / (n_resamples + 1)


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    n_resamples: int = 10_000,
    seed: int = 0,
    *,
    confidence: float = 0.95,
) -> PairedTest:
    """Paired comparison of two systems' per-query values over the same queries, in the same order.

    diff = mean(a - b); its confidence interval is a percentile bootstrap of the per-query
    differences; the p-value is two-sided, from a paired randomization (sign-flip) test: the
    share of random sign assignments to the differences whose |mean| reaches the observed one.
    With 2**n <= n_resamples every assignment is enumerated (exact p-value); otherwise
    p = (extreme + 1) / (n_resamples + 1). Edge cases: all differences zero -> p = 1.0;
    one query -> ci_low = ci_high = diff.

    Raises:
        ValueError: a and b differ in length or are empty, hold NaN or infinite values,
            confidence is outside (0, 1), or n_resamples < 1.
    """
    a_values = _as_values(a, "a")
    b_values = _as_values(b, "b")
    if len(a_values) != len(b_values):
        raise ValueError(
            f"a has {len(a_values)} values and b has {len(b_values)}: a paired test needs one "
            "value per query from each, over the same queries in the same order"
        )
    if len(a_values) == 0:
        raise ValueError("a and b are empty: a paired test needs at least one query")
    _check_resampling(confidence, n_resamples)
    diffs = a_values - b_values
    ci_seed, test_seed = np.random.SeedSequence(seed).spawn(2)
    interval = _bootstrap_interval(diffs, confidence, n_resamples, np.random.default_rng(ci_seed))
    if not diffs.any():
        p_value = 1.0
    else:
        p_value = _sign_flip_p_value(diffs, n_resamples, np.random.default_rng(test_seed))
    return PairedTest(interval.mean, interval.low, interval.high, p_value, len(diffs))
