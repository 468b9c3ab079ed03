"""Confidence intervals, paired significance tests (two-sided; one-sided non-inferiority) and the
Holm correction over per-query values.

Pure numpy, vectorised, seeded: the same inputs and seed give the same numbers.

``bootstrap_ci`` and ``paired_test`` treat one column or one pair. ``bootstrap_cis`` and
``paired_tests`` treat many at once with the very same resamples (a generator seeded alike, drawn
alike): the resample index matrix is drawn once per number of queries and every column's
resampled means come from it through one matrix product, so a run's hundreds of (strategy, metric,
k) columns, or a page's paired tests, cost one draw instead of one each.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

#: Largest resample matrix held at once (rows x queries), so a run with many queries stays small.
_MAX_CELLS = 2_000_000
#: Resample cells (rows x queries) the batched functions draw and use at once: small enough for
#: the CPU cache. numpy's generator hands out the same numbers whatever the block sizes.
_BLOCK_CELLS = 65_536


@functools.cache
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _one_blas_thread():
    """The batched products are thin (a few resamples x the queries, times the columns): BLAS
    threads cost more than they give on them (20x slower measured on 2 busy cores)."""
    return _blas_controller().limit(limits=1, user_api="blas")


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


def _sign_flip_p_value(diffs: np.ndarray, n_resamples: int, rng: np.random.Generator,
                       alternative: str = "two-sided") -> float:
    """Share of random sign assignments at least as extreme as the observed one.

    "two-sided": |sum| >= |observed sum|; "less": sum <= observed sum (small when the values
    lean negative).
    """
    n = len(diffs)
    # Compare sums, with a tolerance so that float noise does not decide ties.
    tolerance = 1e-9 * max(1.0, float(np.abs(diffs).sum()))
    if alternative == "two-sided":
        observed = abs(diffs.sum())

        def extreme(sums: np.ndarray) -> np.ndarray:
            return np.abs(sums) >= observed - tolerance
    else:
        observed = diffs.sum()

        def extreme(sums: np.ndarray) -> np.ndarray:
            return sums <= observed + tolerance
    if 2**n <= n_resamples:
        # Few queries: enumerate every sign assignment, which gives the exact p-value.
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        return float(np.mean(extreme(signs @ diffs)))
    count = 0
    for rows in _chunks(n_resamples, n):
        signs = rng.choice(np.array([1.0, -1.0]), size=(rows, n))
        count += int(np.count_nonzero(extreme(signs @ diffs)))
    # The observed assignment counts as one of the resamples, so p is never 0.
    return (count + 1) / (n_resamples + 1)


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


class NonInferiorityTest(NamedTuple):
    """Is a candidate worse than a baseline by more than a margin, over the same queries?"""

    #: mean(candidate - baseline)
    diff: float
    ci_low: float
    ci_high: float
    #: One-sided p-value of H0 "diff >= -margin" against H1 "diff < -margin" (the candidate is
    #: worse by more than the margin).
    p_value: float
    n: int
    margin: float


def non_inferiority_test(
    candidate: Sequence[float],
    baseline: Sequence[float],
    margin: float = 0.0,
    n_resamples: int = 10_000,
    seed: int = 0,
    *,
    confidence: float = 0.95,
) -> NonInferiorityTest:
    """One-sided paired test: is the candidate worse than the baseline by more than ``margin``?

    With d_i = candidate_i - baseline_i over the same queries (same order), tests H0: mean(d) >=
    -margin against H1: mean(d) < -margin by a sign-flip randomization test on d_i + margin: the
    share of random sign assignments whose sum is at most the observed one (exact enumeration
    when 2**n <= n_resamples, else (extreme + 1) / (n_resamples + 1)). A small p-value says the
    candidate is significantly worse by more than the margin. The CI is a percentile bootstrap of
    mean(d). Edge cases: identical values and margin 0 -> p = 1.0.

    Raises:
        ValueError: lengths differ or are zero, NaN or infinite values, a negative margin,
            confidence outside (0, 1), or n_resamples < 1.
    """
    c = _as_values(candidate, "candidate")
    b = _as_values(baseline, "baseline")
    if len(c) != len(b):
        raise ValueError(f"candidate has {len(c)} values and baseline has {len(b)}: a paired test "
                         "needs one value per query from each, over the same queries in the same order")
    if len(c) == 0:
        raise ValueError("candidate and baseline are empty: a paired test needs at least one query")
    if not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin of {margin} is not a non-negative number: use e.g. 0.01")
    _check_resampling(confidence, n_resamples)
    diffs = c - b
    ci_seed, test_seed = np.random.SeedSequence(seed).spawn(2)
    interval = _bootstrap_interval(diffs, confidence, n_resamples, np.random.default_rng(ci_seed))
    shifted = diffs + margin
    p_value = 1.0 if not shifted.any() else _sign_flip_p_value(
        shifted, n_resamples, np.random.default_rng(test_seed), alternative="less")
    return NonInferiorityTest(interval.mean, interval.low, interval.high, p_value, len(diffs), margin)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given.

    Sorted ascending p_(1) <= ... <= p_(m), the adjusted value of p_(i) is
    max over j <= i of min(1, (m - j + 1) * p_(j)); rejecting where the adjusted p < alpha keeps
    the family-wise error rate at alpha. Edge cases: no p-values -> []; one -> itself.

    Raises:
        ValueError: a p-value outside [0, 1] or NaN.
    """
    p = np.asarray(p_values, dtype=float)
    if p.size and (not np.isfinite(p).all() or (p < 0).any() or (p > 1).any()):
        raise ValueError(f"p-values must lie in [0, 1]; got {list(p_values)}")
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.maximum.accumulate(adjusted) if m else adjusted
    out = np.empty(m)
    out[order] = adjusted
    return [float(x) for x in out]


def _as_columns(columns: Sequence[Sequence[float]], name: str) -> list[np.ndarray]:
    arrays = [_as_values(c, f"{name}[{i}]") for i, c in enumerate(columns)]
    for i, array in enumerate(arrays):
        if array.size == 0:
            raise ValueError(f"{name}[{i}] is empty: a confidence interval needs at least one value")
    return arrays


def _by_length(arrays: Sequence[np.ndarray]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i, array in enumerate(arrays):
        groups.setdefault(len(array), []).append(i)
    return groups


def _resampled_means(matrix: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The bootstrap means of every row of ``matrix`` (columns x n): an (n_resamples, columns) array.

    Resample r is row r of ``rng.integers(0, n, size=(n_resamples, n))``, drawn block by block
    (numpy hands out the same numbers as in one draw, or in bootstrap_ci's blocks); the mean of a
    column under it is (counts_r . values) / n, with counts_r how often each query was drawn: one
    matrix product per block for all columns.
    """
    n = matrix.shape[1]
    rows = max(1, _BLOCK_CELLS // n)
    offsets = (np.arange(rows) * n)[:, None]
    means = np.empty((n_resamples, matrix.shape[0]))
    for start in range(0, n_resamples, rows):
        block = min(rows, n_resamples - start)
        index = rng.integers(0, n, size=(block, n))
        index += offsets[:block]
        counts = np.bincount(index.ravel(), minlength=block * n).reshape(block, n)
        means[start:start + block] = counts @ matrix.T
    means /= n
    return means


def _percentile_intervals(matrix: np.ndarray, confidence: float, n_resamples: int,
                          rng: np.random.Generator) -> list[Interval]:
    """Each row's mean and percentile bootstrap interval, all rows under the same resamples."""
    centre = matrix.mean(axis=1)
    if matrix.shape[1] == 1:
        return [Interval(float(m), float(m), float(m)) for m in centre]
    alpha = 1 - confidence
    low, high = np.percentile(_resampled_means(matrix, n_resamples, rng),
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
    _check_resampling(confidence, n_resamples)
    out: list[Interval | None] = [None] * len(arrays)
    with _one_blas_thread():
        _fill_intervals(arrays, out, confidence, n_resamples, seed)
    return out  # type: ignore[return-value]


def _fill_intervals(arrays: list[np.ndarray], out: list[Interval | None], confidence: float,
                    n_resamples: int, seed: int) -> None:
    for indices in _by_length(arrays).values():
        matrix = np.stack([arrays[i] for i in indices])
        intervals = _percentile_intervals(matrix, confidence, n_resamples, np.random.default_rng(seed))
        for i, interval in zip(indices, intervals, strict=True):
            out[i] = interval


def _sign_flip_p_values(diffs: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``_sign_flip_p_value`` of every row of ``diffs`` (pairs x n), under the same sign draws."""
    n = diffs.shape[1]
    observed = np.abs(diffs.sum(axis=1))
    tolerance = 1e-9 * np.maximum(1.0, np.abs(diffs).sum(axis=1))
    if 2**n <= n_resamples:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        return np.mean(np.abs(signs @ diffs.T) >= observed - tolerance, axis=0)
    extreme = np.zeros(len(diffs), dtype=np.int64)
    rows = max(1, _BLOCK_CELLS // n)
    for start in range(0, n_resamples, rows):
        block = min(rows, n_resamples - start)
        signs = rng.choice(np.array([1.0, -1.0]), size=(block, n))
        extreme += np.count_nonzero(np.abs(signs @ diffs.T) >= observed - tolerance, axis=0)
    return (extreme + 1) / (n_resamples + 1)


def paired_tests(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    n_resamples: int = 10_000,
    seed: int = 0,
    *,
    confidence: float = 0.95,
) -> list[PairedTest]:
    """``paired_test`` of each (a, b) pair, drawing the resamples and sign flips once per length.

    Equal to ``[paired_test(a, b, n_resamples, seed, confidence=confidence) for a, b in pairs]``
    up to the order in which resampled sums are added (~1e-16; the p-values' comparison carries
    paired_test's tolerance), at the cost of one paired test per distinct number of queries.

    Raises:
        ValueError: as paired_test, naming the pair.
    """
    _check_resampling(confidence, n_resamples)
    diffs = []
    for i, (a, b) in enumerate(pairs):
        a_values, b_values = _as_values(a, f"pair {i}: a"), _as_values(b, f"pair {i}: b")
        if len(a_values) != len(b_values):
            raise ValueError(
                f"pair {i}: a has {len(a_values)} values and b has {len(b_values)}: a paired test "
                "needs one value per query from each, over the same queries in the same order"
            )
        if len(a_values) == 0:
            raise ValueError(f"pair {i}: a and b are empty: a paired test needs at least one query")
        diffs.append(a_values - b_values)
    out: list[PairedTest | None] = [None] * len(diffs)
    with _one_blas_thread():
        _fill_tests(diffs, out, confidence, n_resamples, seed)
    return out  # type: ignore[return-value]


def _fill_tests(diffs: list[np.ndarray], out: list[PairedTest | None], confidence: float,
                n_resamples: int, seed: int) -> None:
    for n, indices in _by_length(diffs).items():
        matrix = np.stack([diffs[i] for i in indices])
        ci_seed, test_seed = np.random.SeedSequence(seed).spawn(2)
        p_values = np.ones(len(indices))
        moving = matrix.any(axis=1)
        with ThreadPoolExecutor(max_workers=1) as pool:
            # The sign flips and the resamples come from two generators: draw them side by side
            # (numpy draws and multiplies without holding the GIL).
            flips = (pool.submit(_sign_flip_p_values, matrix[moving], n_resamples,
                                 np.random.default_rng(test_seed))
                     if moving.any() else None)
            intervals = _percentile_intervals(matrix, confidence, n_resamples, np.random.default_rng(ci_seed))
            if flips is not None:
                p_values[moving] = flips.result()
        for i, interval, p in zip(indices, intervals, p_values, strict=True):
            out[i] = PairedTest(interval.mean, interval.low, interval.high, float(p), n)
