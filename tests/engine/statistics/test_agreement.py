from __future__ import annotations

import random

import pytest
from sklearn.metrics import cohen_kappa_score

from searchgrade.engine.statistics.agreement import cohen_kappa, confusion_matrix, judge_human_agreement


def test_unweighted_kappa_hand_value():
    # p_o = 3/4, p_e = 1/2 * 1/4 + 1/2 * 3/4 = 1/2 -> (3/4 - 1/2) / (1/2) = 0.5
    assert cohen_kappa([0, 0, 1, 1], [0, 1, 1, 1]) == pytest.approx(0.5)


def test_linear_kappa_hand_value():
    # Observed weighted disagreement 1/6, expected 1/2 -> 1 - (1/6)/(1/2) = 2/3.
    assert cohen_kappa([0, 1, 2], [0, 2, 2], "linear") == pytest.approx(2 / 3)


@pytest.mark.parametrize("weights", ["unweighted", "linear", "quadratic"])
def test_kappa_matches_sklearn(weights):
    rng = random.Random(3)
    a = [rng.randint(0, 3) for _ in range(200)]
    b = [min(3, max(0, x + rng.choice([-1, 0, 0, 1]))) for x in a]
    expected = cohen_kappa_score(a, b, weights=None if weights == "unweighted" else weights)
    assert cohen_kappa(a, b, weights) == pytest.approx(expected, abs=1e-12)


def test_kappa_is_undefined_when_both_raters_use_one_label():
    assert cohen_kappa([2, 2], [2, 2]) is None
    assert cohen_kappa([], []) is None


def test_confusion_matrix_rows_are_the_first_rater():
    assert confusion_matrix([0, 1, 1], [1, 1, 0], [0, 1]) == [[0, 1], [1, 1]]
    with pytest.raises(ValueError, match="length"):
        confusion_matrix([0], [0, 1], [0, 1])


def test_agreement_uses_shared_pairs_and_skips_failures():
    judge = {("q1", "a"): 3, ("q1", "b"): 0, ("q1", "c"): None, ("q2", "a"): 2}
    human = {("q1", "a"): 1, ("q1", "b"): 0, ("q1", "c"): 1, ("q3", "x"): 1}
    result = judge_human_agreement(judge, human)
    assert result.n == 2
    assert result.labels == [0, 1, 3]
    assert result.confusion == [[1, 0, 0], [0, 0, 0], [0, 1, 0]]
    assert result.kappa_binary == pytest.approx(1.0)  # 3 >= 2 with 1 >= 1, 0 with 0
    assert result.exact == pytest.approx(0.5)
