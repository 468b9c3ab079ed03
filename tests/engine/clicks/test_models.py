"""Click models on hand-made counts, and the position-based model recovering known parameters."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.engine.clicks.grading import click_grades
from searchgrade.engine.clicks.models import ClickCounts, coec, ctr, fit_pbm
from searchgrade.engine.clicks.thresholds import grade


def test_ctr_and_coec_by_hand():
    # Pair 0 at rank 1: 10 of 100 clicked; pair 1 at rank 2: 10 of 100; pair 2 at rank 2: 30 of 100.
    counts = ClickCounts.of([0, 1, 2], [1, 2, 2], [100, 100, 100], [10, 10, 30])
    assert ctr(counts).tolist() == pytest.approx([0.1, 0.1, 0.3])
    # ctr_1 = 0.1, ctr_2 = 40/200 = 0.2: pair 1 got half its expected clicks, pair 2 1.5 times.
    assert coec(counts).tolist() == pytest.approx([0.1, 0.05, 0.15])


def test_grades_follow_the_cut_points_and_few_impressions_stay_unjudged():
    assert grade([0.05, 0.1, 0.3, 0.5, 0.9], (0.1, 0.25, 0.5)).tolist() == [0, 1, 2, 3, 3]
    counts = ClickCounts.of([0, 1], [1, 1], [50, 5], [40, 5])
    found = click_grades(counts, "ctr", min_examinations=10, cutpoints=(0.1, 0.25, 0.5))
    assert found.grades.tolist() == [3, 3] and found.judged.tolist() == [True, False]
    assert found.thresholds.source == "given"
    with pytest.raises(ValueError, match="not one of"):
        click_grades(counts, "dbn")
    with pytest.raises(ValueError, match="clicks <= impressions"):
        ClickCounts.of([0], [1], [1], [2])


def test_the_position_based_model_recovers_examination_and_attractiveness():
    rng = np.random.default_rng(0)
    n_pairs, theta = 400, 1 / np.arange(1, 11)
    alpha = rng.uniform(0.05, 0.9, n_pairs)
    pair, position, shown, clicked = [], [], [], []
    for i in range(n_pairs):
        for p in rng.choice(np.arange(1, 11), size=3, replace=False):  # each result seen at three ranks
            n = 200
            pair.append(i), position.append(p), shown.append(n)
            clicked.append(rng.binomial(n, theta[p - 1] * alpha[i]))
    fitted_alpha, fitted_theta = fit_pbm(ClickCounts.of(pair, position, shown, clicked))
    assert fitted_theta[1:] == pytest.approx(theta, abs=0.03)
    assert np.corrcoef(fitted_alpha, alpha)[0, 1] > 0.95
    assert np.abs(fitted_alpha - alpha).mean() < 0.05
    # With theta given, only the attractiveness is fitted, and theta comes back as it was given.
    given_alpha, given_theta = fit_pbm(ClickCounts.of(pair, position, shown, clicked), theta=np.r_[1.0, theta])
    assert given_theta[1:] == pytest.approx(theta)
    assert np.abs(given_alpha - alpha).mean() < 0.05
