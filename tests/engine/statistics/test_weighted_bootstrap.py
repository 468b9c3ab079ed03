"""The traffic-weighted mean and its weighted bootstrap: hand-computed cases, and coverage of the
true traffic-weighted mean of a simulated Zipf log in ~95% of query sets drawn from it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from searchgrade.engine.statistics.bootstrap import bootstrap_ci
from searchgrade.engine.statistics.weighted_bootstrap import (
    weighted_bootstrap_ci,
    weighted_bootstrap_cis,
    weighted_mean,
)
from searchgrade.engine.traffic.sampling import sample_queries


def test_weighted_mean_weights_each_query_by_its_searches():
    # 90 searches of a query scoring 1.0, 10 of one scoring 0.0: the average search sees 0.9.
    assert weighted_mean([1.0, 0.0], [90, 10]) == pytest.approx(0.9)
    assert weighted_mean([1.0, math.nan, 0.0], [90, 1000, 10]) == pytest.approx(0.9)  # no value: no weight
    assert math.isnan(weighted_mean([math.nan], [3]))


def test_equal_weights_give_the_plain_bootstrap_interval_of_the_mean():
    values = np.random.default_rng(3).uniform(0, 1, 40)
    weighted = weighted_bootstrap_ci(values, np.ones(40), n_resamples=4000, seed=1)
    plain = bootstrap_ci(values, n_resamples=4000, seed=1)
    assert weighted.mean == pytest.approx(plain.mean)
    assert weighted.low == pytest.approx(plain.low, abs=0.01)
    assert weighted.high == pytest.approx(plain.high, abs=0.01)


def test_fixed_queries_are_never_resampled():
    # Every query taken for certain: the set is the whole population, the figure has no sampling error.
    ci = weighted_bootstrap_ci([0.2, 0.9, 0.4], [5, 3, 1], fixed=[True, True, True])
    assert ci.low == ci.mean == ci.high == pytest.approx((0.2 * 5 + 0.9 * 3 + 0.4) / 9)
    # One fixed query among free ones narrows the interval against resampling it too.
    rng = np.random.default_rng(0)
    values, weights = rng.uniform(0, 1, 30), rng.uniform(1, 5, 30)
    weights[0] = 200
    free = weighted_bootstrap_ci(values, weights, n_resamples=2000)
    held = weighted_bootstrap_ci(values, weights, fixed=[True] + [False] * 29, n_resamples=2000)
    assert held.mean == free.mean
    assert held.high - held.low < free.high - free.low


def test_many_columns_share_the_resamples_and_nan_is_no_value():
    rng = np.random.default_rng(5)
    a, weights = rng.uniform(0, 1, 25), rng.uniform(1, 10, 25)
    b = a.copy()
    b[:5] = np.nan
    one, two = weighted_bootstrap_cis([a, b], weights, n_resamples=1000, seed=2)
    assert one == pytest.approx(weighted_bootstrap_ci(a, weights, n_resamples=1000, seed=2), rel=1e-12)
    assert two.mean == pytest.approx(weighted_mean(b, weights))
    assert two.low < two.mean < two.high


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"columns": [[1.0, 2.0]], "weights": [1.0]}, "one value per query"),
    ({"columns": [[1.0]], "weights": [-1.0]}, "non-negative"),
    ({"columns": [[math.inf]], "weights": [1.0]}, "infinite"),
    ({"columns": [[1.0, 2.0]], "weights": [1.0, 1.0], "strata": ["a"]}, "one label per query"),
])
def test_bad_input_is_one_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        weighted_bootstrap_cis(**kwargs)


# -- coverage: a Zipf log with known per-query values; query sets drawn as searchgrade draws them

N_QUERIES = 5000
REPEATS = 300


@pytest.fixture(scope="module")
def population():
    rng = np.random.default_rng(1)
    rank = np.arange(1, N_QUERIES + 1)
    counts = np.maximum(1, np.floor(20000 / rank))  # Zipf: the top query 20,000 searches, the tail 1 each
    values = np.clip(0.75 - 0.1 * np.log10(rank) + rng.normal(0, 0.25, N_QUERIES), 0, 1)  # head does better
    return counts, values, float((counts * values).sum() / counts.sum())


def coverage(population, method: str) -> float:
    counts, values, truth = population
    hits = 0
    for rep in range(REPEATS):
        s = sample_queries(counts, method, 200, seed=rep)
        ci = weighted_bootstrap_ci(values[s.indices], s.weights, s.strata, s.fixed, n_resamples=500, seed=rep)
        hits += ci.low <= truth <= ci.high
    return hits / REPEATS


@pytest.mark.parametrize("method", ["frequency", "stratified"])
def test_the_interval_covers_the_true_traffic_weighted_mean_about_95_percent_of_the_time(population, method):
    # 300 query sets of 200 from a 5,000-query log; binomial noise of 300 draws is about +-2.5 points.
    assert 0.91 <= coverage(population, method) <= 0.985


def test_uniform_sets_miss_the_head_so_their_traffic_weighted_mean_is_unreliable(population):
    # Drawn with equal chance, a set of 200 rarely holds the head queries that carry most searches:
    # the docs say so and recommend frequency or stratified sets for traffic-weighted figures.
    assert coverage(population, "uniform") < 0.8
