"""The paired sign-flip randomization test, as the reranker training's held-out report uses it
(engine/training/heldout.py, with Holm's adjustment from engine/statistics/multiple.py).

The dashboard, the CLI and the gate do not use this: their one procedure, whose verdict is its
interval's, is engine/statistics/paired.py.

Pure numpy, seeded: the same inputs and seed give the same numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from searchgrade.engine.statistics.bootstrap import percentile_interval, percentile_intervals
from searchgrade.engine.statistics.resampling import (
    BLOCK_CELLS,
    as_values,
    by_length,
    check_resampling,
    chunks,
    one_blas_thread,
)


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
    for rows in chunks(n_resamples, n):
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
    a_values = as_values(a, "a")
    b_values = as_values(b, "b")
    if len(a_values) != len(b_values):
        raise ValueError(
            f"a has {len(a_values)} values and b has {len(b_values)}: a paired test needs one "
            "value per query from each, over the same queries in the same order"
        )
    if len(a_values) == 0:
        raise ValueError("a and b are empty: a paired test needs at least one query")
    check_resampling(confidence, n_resamples)
    diffs = a_values - b_values
    ci_seed, test_seed = np.random.SeedSequence(seed).spawn(2)
    interval = percentile_interval(diffs, confidence, n_resamples, np.random.default_rng(ci_seed))
    if not diffs.any():
        p_value = 1.0
    else:
        p_value = _sign_flip_p_value(diffs, n_resamples, np.random.default_rng(test_seed))
    return PairedTest(interval.mean, interval.low, interval.high, p_value, len(diffs))


# Until the dashboard and the gate move to engine/statistics/paired.py (the next commits).
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
    c = as_values(candidate, "candidate")
    b = as_values(baseline, "baseline")
    if len(c) != len(b):
        raise ValueError(f"candidate has {len(c)} values and baseline has {len(b)}: a paired test "
                         "needs one value per query from each, over the same queries in the same order")
    if len(c) == 0:
        raise ValueError("candidate and baseline are empty: a paired test needs at least one query")
    if not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin of {margin} is not a non-negative number: use e.g. 0.01")
    check_resampling(confidence, n_resamples)
    diffs = c - b
    ci_seed, test_seed = np.random.SeedSequence(seed).spawn(2)
    interval = percentile_interval(diffs, confidence, n_resamples, np.random.default_rng(ci_seed))
    shifted = diffs + margin
    p_value = 1.0 if not shifted.any() else _sign_flip_p_value(
        shifted, n_resamples, np.random.default_rng(test_seed), alternative="less")
    return NonInferiorityTest(interval.mean, interval.low, interval.high, p_value, len(diffs), margin)


def _sign_flip_p_values(diffs: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``_sign_flip_p_value`` of every row of ``diffs`` (pairs x n), under the same sign draws."""
    n = diffs.shape[1]
    observed = np.abs(diffs.sum(axis=1))
    tolerance = 1e-9 * np.maximum(1.0, np.abs(diffs).sum(axis=1))
    if 2**n <= n_resamples:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        return np.mean(np.abs(signs @ diffs.T) >= observed - tolerance, axis=0)
    extreme = np.zeros(len(diffs), dtype=np.int64)
    rows = max(1, BLOCK_CELLS // n)
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
    check_resampling(confidence, n_resamples)
    diffs = []
    for i, (a, b) in enumerate(pairs):
        a_values, b_values = as_values(a, f"pair {i}: a"), as_values(b, f"pair {i}: b")
        if len(a_values) != len(b_values):
            raise ValueError(
                f"pair {i}: a has {len(a_values)} values and b has {len(b_values)}: a paired test "
                "needs one value per query from each, over the same queries in the same order"
            )
        if len(a_values) == 0:
            raise ValueError(f"pair {i}: a and b are empty: a paired test needs at least one query")
        diffs.append(a_values - b_values)
    out: list[PairedTest | None] = [None] * len(diffs)
    with one_blas_thread():
        _fill_tests(diffs, out, confidence, n_resamples, seed)
    return out  # type: ignore[return-value]


def _fill_tests(diffs: list[np.ndarray], out: list[PairedTest | None], confidence: float,
                n_resamples: int, seed: int) -> None:
    for n, indices in by_length(diffs).items():
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
            intervals = percentile_intervals(matrix, confidence, n_resamples, np.random.default_rng(ci_seed))
            if flips is not None:
                p_values[moving] = flips.result()
        for i, interval, p in zip(indices, intervals, p_values, strict=True):
            out[i] = PairedTest(interval.mean, interval.low, interval.high, float(p), n)
