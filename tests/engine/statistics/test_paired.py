"""The one procedure: paired bootstrap differences, adjusted for m comparisons, whose verdict is
the interval's (and the gate's margin form)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from searchgrade.engine.statistics.paired import (
    ALPHA,
    PairedDifference,
    adjusted_p,
    interval_words,
    min_queries,
    paired_difference,
    paired_differences,
    resamples_for,
    tail_count,
)
from searchgrade.engine.statistics.pairing import Change, differences


def _random_pair(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Values of every awkward kind: graded (many ties), continuous, constant, shifted or not."""
    n = int(rng.integers(1, 40))
    kind = rng.integers(0, 5)
    if kind == 0:  # grades 0..3: differences take few values
        a, b = rng.integers(0, 4, n).astype(float), rng.integers(0, 4, n).astype(float)
    elif kind == 1:  # continuous, with a random shift
        b = rng.normal(0.5, 0.2, n)
        a = b + rng.normal(rng.choice([0.0, 0.02, 0.05, 0.1]), 0.1, n)
    elif kind == 2:  # every difference equal (zero variance), sometimes 0
        b = rng.random(n)
        a = b + rng.choice([0.0, 0.1, -0.3])
    elif kind == 3:  # mostly unchanged, a few queries moved
        b = rng.random(n)
        a = b.copy()
        moved = rng.random(n) < 0.2
        a[moved] += rng.choice([-1.0, 1.0], moved.sum()) * 0.25
    else:  # equal and opposite moves: the mean is exactly 0 on some resamples
        half = rng.choice([-0.5, 0.5], (n + 1) // 2)
        d = np.concatenate([half, -half])[:n]
        b = rng.random(n)
        a = b + d
    return a, b


def test_the_verdict_is_the_interval_and_the_p_value_over_many_random_inputs():
    rng = np.random.default_rng(20)
    seen = {"significant": 0, "not": 0, "too few": 0}
    for case in range(300):
        m = int(rng.integers(1, 13))
        pairs = [_random_pair(rng) for _ in range(int(rng.integers(1, 4)))]
        for d in paired_differences(pairs, m=m, n_resamples=int(rng.integers(50, 3000)), seed=case):
            assert d.significant == (d.p_value < ALPHA) == (d.ci_low > 0 or d.ci_high < 0), (case, d)
            assert d.m == m and 0 < d.p_value <= 1
            if d.estimable:
                assert d.ci_low <= d.ci_high
            seen["too few" if not d.estimable else "significant" if d.significant else "not"] += 1
        # Two runs' verdict (engine/statistics/pairing.py): a drop is a significant fall beyond the margin.
        margin = float(rng.choice([0.0, 0.01, 0.1]))
        for d in paired_differences(pairs, m=m, n_resamples=int(rng.integers(50, 3000)), seed=case):
            for higher in (True, False):
                c = Change("s", 0.0, d.diff, d, higher, margin)
                worse = d.ci_high < 0 if higher else d.ci_low > 0
                assert c.drop == (worse and abs(d.diff) > margin) == (c.verdict == "drop"), (case, c)
                assert not (c.drop and c.gain) and (c.drop or c.gain) <= d.significant
    assert min(seen.values()) > 30, seen  # every branch was exercised


def test_the_interval_ends_are_chosen_from_the_p_value_itself():
    for m, r in ((1, 5000), (8, 6400), (3, 10_000), (12, 9600), (1, 801)):
        j = tail_count(m, ALPHA, r)
        counts = np.arange(r + 1)
        assert ((counts <= j) == (adjusted_p(counts, m, r) < ALPHA)).all()
    # One comparison, 5,000 resamples: the 125th smallest and 125th largest of the resampled
    # means (124 beyond each end): the 2.5% and 97.5% percentiles.
    assert tail_count(1, ALPHA, 5000) == 124


def test_the_procedure_is_what_its_docstring_says():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.55, 0.2, 25), rng.normal(0.5, 0.2, 25)
    m, r = 4, resamples_for(4, n_resamples=2000)  # 3,200: raised for four comparisons
    d = paired_difference(a, b, m=m, n_resamples=2000, seed=7)
    # Plainly: r rows of indices drawn with the seed, their means sorted.
    index = np.random.default_rng(7).integers(0, 25, size=(r, 25))
    means = np.sort((a - b)[index].mean(axis=1))
    j = tail_count(m, ALPHA, r)
    assert d.diff == pytest.approx((a - b).mean(), abs=1e-15)
    assert (d.ci_low, d.ci_high) == pytest.approx((means[j], means[r - 1 - j]), abs=1e-12)
    far = min((means <= 0).sum(), (means >= 0).sum())
    assert d.p_value == pytest.approx(min(1.0, m * 2 * (far + 1) / (r + 1)))
    assert d.confidence == pytest.approx(1 - 0.05 / 4)


def test_all_differences_zero_are_never_significant():
    values = np.linspace(0, 1, 30)
    d = paired_difference(values, values)
    assert (d.diff, d.ci_low, d.ci_high, d.p_value, d.significant) == (0.0, 0.0, 0.0, 1.0, False)


def test_all_differences_equal_give_a_zero_width_interval_that_excludes_zero():
    b = np.linspace(0, 1, 30)
    d = paired_difference(b + 0.1, b, m=3, n_resamples=5000)
    assert d.ci_low == pytest.approx(0.1) and d.ci_high == pytest.approx(0.1)
    assert d.significant and d.p_value == pytest.approx(3 * 2 / 5001)


def test_one_query_has_no_interval_and_no_verdict():
    d = paired_difference([0.8], [0.5])
    assert d.diff == pytest.approx(0.3) and d.n == 1
    assert math.isnan(d.ci_low) and math.isnan(d.ci_high)
    assert (d.p_value, d.significant, d.estimable) == (1.0, False, False)
    assert interval_words(d) == "no 95% CI from 1 query: a verdict needs at least 6"


def test_a_verdict_needs_enough_queries_for_the_family():
    # 2**(1-n) < alpha / m: five queries all improved could be five coin flips going one way.
    assert min_queries(1) == 6 and min_queries(8) == 9 and min_queries(20) == 10
    up = np.ones(9)
    assert not paired_difference(up[:8], np.zeros(8), m=8).estimable
    assert paired_difference(up, np.zeros(9), m=8).significant
    assert paired_difference(up[:6], np.zeros(6)).significant
    assert not paired_difference(up[:5], np.zeros(5)).significant


def test_ties_and_cancelling_moves_are_not_significant():
    d = paired_difference([1.0, 0.0] * 15, [0.0, 1.0] * 15)
    assert d.diff == 0.0 and d.ci_low < 0 < d.ci_high and d.p_value == 1.0


def test_a_real_shift_is_significant_in_either_direction():
    rng = np.random.default_rng(5)
    base = rng.normal(0.5, 0.2, 50)
    up = paired_difference(base + 0.1 + rng.normal(0, 0.05, 50), base)
    down = paired_difference(base, base + 0.1)
    assert up.significant and 0 < up.ci_low < up.diff < up.ci_high
    assert down.significant and down.ci_high < 0 and down.diff == pytest.approx(-0.1)


def test_more_comparisons_widen_the_interval_and_multiply_the_p_value():
    rng = np.random.default_rng(8)
    b = rng.normal(0.5, 0.2, 60)
    a = b + rng.normal(0.04, 0.1, 60)
    one = paired_difference(a, b, m=1, n_resamples=10_000)
    five = paired_difference(a, b, m=5, n_resamples=10_000)
    assert five.ci_low < one.ci_low and five.ci_high > one.ci_high
    assert five.p_value == pytest.approx(min(1.0, 5 * one.p_value))
    assert interval_words(five).endswith(", adjusted for 5 comparisons")
    assert interval_words(one).startswith("95% CI +0.0") and "adjusted" not in interval_words(one)


def test_a_large_family_gets_enough_resamples_for_its_interval():
    assert resamples_for(8, n_resamples=5000) == 6400 and resamples_for(2, n_resamples=5000) == 5000
    rng = np.random.default_rng(2)
    b = rng.normal(0.5, 0.2, 40)
    d = paired_difference(b + rng.normal(0.1, 0.1, 40), b, m=30, n_resamples=100)
    assert d.p_value >= 30 * 2 / (resamples_for(30, n_resamples=100) + 1)


def test_the_family_wise_error_rate_holds_under_no_difference():
    rng = np.random.default_rng(11)
    false_alarms = 0
    for family in range(150):
        pairs = [(rng.normal(0.5, 0.2, 40), rng.normal(0.5, 0.2, 40)) for _ in range(4)]
        false_alarms += any(d.significant for d in paired_differences(pairs, n_resamples=2000, seed=family))
    assert false_alarms / 150 < 0.09


def test_a_family_is_resampled_once_and_each_pair_equals_its_own_call():
    rng = np.random.default_rng(4)
    pairs = [(rng.random(20), rng.random(20)), (rng.random(12), rng.random(12)), (rng.random(20), rng.random(20))]
    together = paired_differences(pairs, seed=2, n_resamples=3000)
    for (a, b), d in zip(pairs, together, strict=True):
        alone = paired_difference(a, b, m=3, seed=2, n_resamples=3000)
        assert tuple(d) == pytest.approx(tuple(alone), abs=1e-12)
    assert paired_differences(pairs, seed=2, n_resamples=3000) == together
    assert paired_differences([]) == []


def test_a_drop_is_a_significant_fall_beyond_the_margin_and_within_it_is_said_so():
    rng = np.random.default_rng(1)
    base = rng.normal(0.5, 0.1, 80)
    same, worse, slightly = differences(
        [(base, base), (base - 0.1 + rng.normal(0, 0.02, 80), base), (base - 0.005, base)])
    same, worse, slightly = (Change("s", 0.5, 0.5 + d.diff, d, True, 0.01) for d in (same, worse, slightly))
    assert same.verdict is None and same.difference.p_value == 1.0
    assert worse.verdict == "drop" and worse.difference.ci_high < -0.01
    assert slightly.verdict is None and slightly.worse  # significantly worse, but within the margin
    assert "within the margin of 0.01" in slightly.reading
    assert [c.difference.m for c in (same, worse, slightly)] == [3, 3, 3]


def test_bad_input_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="3 values and b has 2"):
        paired_difference([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="empty"):
        paired_difference([], [])
    with pytest.raises(ValueError, match="NaN"):
        paired_difference([1.0, float("nan")], [1.0, 2.0])
    with pytest.raises(ValueError, match="m of 0"):
        paired_difference([1.0], [1.0], m=0)
    with pytest.raises(ValueError, match="alpha of 1.5"):
        paired_difference([1.0], [1.0], alpha=1.5)
    assert isinstance(paired_difference([1.0], [1.0]), PairedDifference)
