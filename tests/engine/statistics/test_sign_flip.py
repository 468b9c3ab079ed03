"""The sign-flip test of the reranker training's held-out report."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.engine.statistics.sign_flip import PairedTest, paired_test


def _normal(seed: int, n: int, mean: float = 0.5, sd: float = 0.2) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, sd, n)


def test_paired_test_detects_a_real_shift():
    base = _normal(5, 50)
    noise = np.random.default_rng(6).normal(0, 0.05, 50)
    result = paired_test(base + 0.1 + noise, base)
    assert result.diff == pytest.approx(0.1, abs=0.02)
    assert 0 < result.ci_low < result.diff < result.ci_high
    assert result.p_value < 0.05
    assert result.n == 50


def test_paired_test_sees_the_shift_in_either_direction():
    base = _normal(5, 50)
    result = paired_test(base, base + 0.1)
    assert result.diff == pytest.approx(-0.1)
    assert result.ci_high < 0
    assert result.p_value < 0.05


def test_paired_test_finds_nothing_between_identical_systems():
    values = _normal(7, 30)
    assert paired_test(values, values) == PairedTest(0.0, 0.0, 0.0, 1.0, 30)


def test_paired_test_finds_nothing_in_zero_mean_noise():
    base = _normal(8, 60)
    noisy = base + np.random.default_rng(9).normal(0, 0.2, 60)
    result = paired_test(noisy, base)
    assert result.ci_low < 0 < result.ci_high
    assert result.p_value > 0.05


def test_paired_test_gives_p_one_when_the_differences_cancel_out():
    result = paired_test([1.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, 2.0])
    assert result.diff == 0.0
    assert result.p_value == pytest.approx(1.0)


def test_paired_test_is_exact_for_few_queries():
    # Five queries all better by 1: only the all-plus and all-minus sign flips of 2**5 reach
    # |mean| = 1, so p = 2 / 32.
    assert paired_test([1.0] * 5, [0.0] * 5).p_value == pytest.approx(2 / 32)


def test_paired_test_sampled_p_value_is_close_to_the_exact_one():
    a, b = [1.0, 1.0, 1.0, 1.0, 1.0, -0.5], [0.0] * 6
    exact = paired_test(a, b).p_value  # 2**6 <= 10,000: enumerated
    sampled = paired_test(a, b, n_resamples=50).p_value  # 2**6 > 50: sampled
    assert exact == pytest.approx(4 / 64)  # |sum| >= 4.5: all plus, all minus, +-0.5 flipped alone
    assert sampled == pytest.approx(exact, abs=0.1)
    assert sampled > 0


def test_paired_test_is_deterministic_for_a_seed():
    a, b = _normal(10, 40), _normal(11, 40)
    assert paired_test(a, b, seed=3) == paired_test(a, b, seed=3)


def test_paired_test_with_one_query_has_a_zero_width_ci():
    result = paired_test([0.8], [0.5])
    assert (result.diff, result.ci_low, result.ci_high) == pytest.approx((0.3, 0.3, 0.3))
    assert result.p_value == pytest.approx(1.0)  # flipping the one sign keeps |mean|


def test_paired_test_rejects_a_length_mismatch_naming_both_lengths():
    with pytest.raises(ValueError, match=r"a has 3 values and b has 2"):
        paired_test([1.0, 2.0, 3.0], [1.0, 2.0])


def test_paired_test_rejects_no_queries():
    with pytest.raises(ValueError, match="empty"):
        paired_test([], [])
