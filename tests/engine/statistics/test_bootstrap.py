"""Percentile bootstrap confidence intervals of a mean."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.engine.statistics.bootstrap import Interval, bootstrap_ci


def _normal(seed: int, n: int, mean: float = 0.5, sd: float = 0.2) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, sd, n)


def test_bootstrap_ci_contains_the_mean():
    for seed in range(5):
        values = _normal(seed, 40)
        interval = bootstrap_ci(values)
        assert interval.mean == pytest.approx(values.mean())
        assert interval.low < interval.mean < interval.high


def test_bootstrap_ci_of_a_fair_coin_over_100_queries_spans_about_plus_minus_ten_points():
    # standard error = sqrt(0.25 / 100) = 0.05; 95% -> about +-1.96 * 0.05
    interval = bootstrap_ci([0.0, 1.0] * 50)
    assert interval == Interval(0.5, pytest.approx(0.4, abs=0.01), pytest.approx(0.6, abs=0.01))


def test_bootstrap_ci_narrows_with_more_queries():
    small = bootstrap_ci(_normal(1, 20))
    large = bootstrap_ci(_normal(1, 2000))
    assert (large.high - large.low) < (small.high - small.low) / 5


def test_bootstrap_ci_narrows_with_a_lower_confidence():
    values = _normal(2, 50)
    wide, narrow = bootstrap_ci(values, confidence=0.99), bootstrap_ci(values, confidence=0.8)
    assert wide.low < narrow.low < narrow.high < wide.high


def test_bootstrap_ci_is_deterministic_for_a_seed_and_varies_across_seeds():
    values = _normal(3, 30)
    assert bootstrap_ci(values, seed=42) == bootstrap_ci(values, seed=42)
    assert bootstrap_ci(values, seed=42) != bootstrap_ci(values, seed=43)


def test_bootstrap_ci_of_one_value_is_that_value():
    assert bootstrap_ci([0.7]) == Interval(0.7, 0.7, 0.7)


def test_bootstrap_ci_of_constant_values_has_zero_width():
    assert bootstrap_ci([2.0] * 10) == Interval(2.0, 2.0, 2.0)


def test_bootstrap_ci_handles_more_queries_than_one_resample_block():
    # 5,000 queries x 10,000 resamples is more than one block of the vectorised resampling
    interval = bootstrap_ci(_normal(4, 5000))
    assert interval.low < interval.mean < interval.high


@pytest.mark.parametrize(
    ("values", "kwargs", "match"),
    [
        ([], {}, "empty"),
        ([1.0, float("nan")], {}, "NaN"),
        ([1.0, 2.0], {"confidence": 1.5}, "confidence"),
        ([1.0, 2.0], {"n_resamples": 0}, "n_resamples"),
    ],
)
def test_bootstrap_ci_rejects_bad_input(values, kwargs, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_ci(values, **kwargs)
