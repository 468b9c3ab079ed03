"""The paired sign-flip randomization test, as the reranker training's held-out report uses it
(engine/training/heldout.py, with Holm's adjustment from engine/statistics/multiple.py).

The dashboard, the CLI and the gate do not use this: their one procedure, whose verdict is its
interval's, is engine/statistics/paired.py.

Pure numpy, seeded: the same inputs and seed give the same numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from searchgrade.engine.statistics.bootstrap import percentile_interval
from searchgrade.engine.statistics.resampling import as_values, check_resampling, chunks


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


def _sign_flip_p_value(diffs: np.ndarray, n_resamples: int, rng: np.random.Generator) -> float:
    """Share of random sign assignments whose |sum| reaches the observed |sum|."""
    n = len(diffs)
    # Compare sums, with a tolerance so that float noise does not decide ties.
    tolerance = 1e-9 * max(1.0, float(np.abs(diffs).sum()))
    observed = abs(diffs.sum())

    def extreme(sums: np.ndarray) -> np.ndarray:
        return np.abs(sums) >= observed - tolerance

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
