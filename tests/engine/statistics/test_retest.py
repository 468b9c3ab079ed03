"""Test-retest agreement of a judge asked the same pairs again."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from searchgrade.engine.statistics.retest import retest_agreement


def test_a_judge_that_never_changes_agrees_fully():
    graded = [(f"q{i % 7}", [i % 4] * 3) for i in range(40)]
    result = retest_agreement(graded)
    assert result.exact == (1.0, 1.0, 1.0)
    assert result.changed == (0.0, 0.0, 0.0)
    assert result.kappa_linear.value == pytest.approx(1.0)
    assert (result.n_pairs, result.n_queries, result.repeats) == (40, 7, 2)


def test_hand_counted_agreement_kappa_and_changes():
    # Pair 1: [2, 2, 3] -> 1 of 3 grade pairs equal; pair 2: [0, 0, 0] -> 3 of 3; pair 3: [1, 3] -> 0 of 1.
    graded = [("q1", [2, 2, 3]), ("q1", [0, 0, 0]), ("q2", [1, 3]), ("q2", [3])]
    result = retest_agreement(graded)
    assert result.exact.value == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert result.changed.value == pytest.approx(2 / 3)
    assert result.n_pairs == 3  # the pair graded once is left out
    first, repeat = [2, 2, 0, 0, 1], [2, 3, 0, 0, 3]
    assert result.kappa_linear.value == pytest.approx(
        cohen_kappa_score(first, repeat, weights="linear", labels=[0, 1, 2, 3]))


def test_a_judge_that_answers_at_random_agrees_about_a_quarter_of_the_time():
    rng = np.random.default_rng(0)
    graded = [(f"q{i % 50}", rng.integers(0, 4, 3).tolist()) for i in range(600)]
    result = retest_agreement(graded)
    assert result.exact.low <= 0.25 <= result.exact.high
    assert result.kappa_linear.low <= 0.0 <= result.kappa_linear.high


def test_nothing_to_compare_gives_no_figure_and_bad_grades_are_refused():
    assert retest_agreement([("q", [2])]).exact.value is None
    with pytest.raises(ValueError, match="not on the scale"):
        retest_agreement([("q", [2, 5])])
