"""Cohen's kappa (checked against sklearn) and the confusion matrix."""

from __future__ import annotations

import random

import pytest
from sklearn.metrics import cohen_kappa_score

from searchgrade.engine.statistics.kappa import cohen_kappa, confusion_matrix


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
