"""Bands by cumulative traffic share, and query sets sampled from a log with their design weights."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.engine.traffic.bands import bands
from searchgrade.engine.traffic.sampling import sample_queries

COUNTS = np.array([50, 20, 10, 5, 5, 4, 3, 1, 1, 1], dtype=float)  # 100 searches


def test_bands_follow_the_cumulative_share_of_searches():
    # Shares before each query: 0, .5, .7, .8, .85, .9, .94, .97, .98, .99 -> head < .5 <= torso < .8 <= tail.
    assert bands(COUNTS).tolist() == [0, 1, 1, 2, 2, 2, 2, 2, 2, 2]
    assert bands(COUNTS, 0.6, 0.9).tolist() == [0, 0, 1, 1, 1, 2, 2, 2, 2, 2]


def test_bands_refuse_unsorted_counts():
    with pytest.raises(ValueError, match="sorted most searched first"):
        bands(np.array([1.0, 5.0]))


@pytest.mark.parametrize("method", ["uniform", "frequency", "top", "stratified"])
def test_a_set_is_seeded_and_holds_distinct_queries(method):
    counts = np.maximum(1, np.floor(1000 / np.arange(1, 301)))
    one, two = sample_queries(counts, method, 40, seed=7), sample_queries(counts, method, 40, seed=7)
    assert np.array_equal(one.indices, two.indices)
    assert len(set(one.indices.tolist())) == len(one.indices) <= 40
    assert np.all(np.diff(one.indices) > 0)
    assert np.allclose(one.weights, counts[one.indices] / one.pi)


def test_top_takes_the_most_searched_and_fixes_them():
    s = sample_queries(COUNTS, "top", 3)
    assert s.indices.tolist() == [0, 1, 2] and s.fixed.all()
    assert s.weights.tolist() == [50, 20, 10]


def test_frequency_takes_a_query_whose_share_exceeds_one_draw_for_certain():
    # 50 of 100 searches with 4 draws: pi would be 2, so it is taken for certain (fixed, weight = count).
    s = sample_queries(COUNTS, "frequency", 4, seed=1)
    assert 0 in s.indices.tolist() and s.fixed[0] and s.weights[0] == 50
    assert not s.fixed[1:].all()


def test_stratified_draws_from_every_band_and_weights_within_it():
    counts = np.maximum(1, np.floor(1000 / np.arange(1, 301)))
    s = sample_queries(counts, "stratified", 60, seed=3)
    assert set(s.strata) == {"head", "torso", "tail"}
    assert s.strata == s.bands
    head = int((bands(counts) == 0).sum())  # 12 queries, fewer than a third of 60: taken whole, fixed
    assert len(s.indices) == 60 and s.strata.count("head") == head and all(f for f, b in zip(s.fixed, s.strata, strict=True) if b == "head")


def test_a_set_larger_than_the_log_is_the_whole_log():
    s = sample_queries(COUNTS, "uniform", 50)
    assert s.indices.tolist() == list(range(10)) and s.fixed.all()
