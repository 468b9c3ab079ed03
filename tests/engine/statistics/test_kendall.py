"""Kendall's tau-b between two scorings of the same systems, checked against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from searchgrade.engine.statistics.kendall import kendall_tau_b, kendall_tau_b_rows


def test_tau_b_equals_scipys_with_and_without_ties():
    rng = np.random.default_rng(1)
    for _ in range(200):
        size = int(rng.integers(2, 9))
        x = rng.integers(0, 4, size).astype(float)
        y = rng.integers(0, 4, size).astype(float)
        expected = kendalltau(x, y).statistic
        got = kendall_tau_b(x.tolist(), y.tolist())
        if np.isnan(expected):
            assert got is None
        else:
            assert got == pytest.approx(expected, abs=1e-12)


def test_the_same_order_is_1_and_a_reversed_one_is_minus_1():
    assert kendall_tau_b([0.3, 0.5, 0.9], [3, 5, 9]) == pytest.approx(1.0)
    assert kendall_tau_b([0.3, 0.5, 0.9], [9, 5, 3]) == pytest.approx(-1.0)
    # The same ties on both sides agree fully.
    assert kendall_tau_b([1, 1, 2], [5, 5, 7]) == pytest.approx(1.0)


def test_tau_is_undefined_without_an_order():
    assert kendall_tau_b([1.0], [2.0]) is None
    assert kendall_tau_b([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None


def test_float_noise_in_a_mean_is_a_tie_not_an_order():
    # 0.1 + 0.2 differs from 0.3 by 5.6e-17: the same value.
    assert kendall_tau_b([0.1 + 0.2, 0.3, 1.0], [1.0, 1.0, 2.0]) == pytest.approx(1.0)


def test_rows_are_computed_independently():
    x = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    y = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    assert kendall_tau_b_rows(x, y).tolist() == pytest.approx([1.0, -1.0])


def test_different_lengths_are_refused():
    with pytest.raises(ValueError, match="same systems"):
        kendall_tau_b([1, 2], [1, 2, 3])
