"""Grades from clicks: the position bias from a log's interventions (or the stated default), the
cut-points from its clicks (or the stated defaults), on hand-made counts and known parameters."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.engine.clicks.grading import click_grades
from searchgrade.engine.clicks.models import ClickCounts, fit_pbm
from searchgrade.engine.clicks.position_bias import default_theta, position_bias
from searchgrade.engine.clicks.thresholds import DEFAULT_CUTPOINTS, derive_thresholds, otsu_split


def test_otsu_splits_two_groups_by_hand():
    lower, split, upper = otsu_split(np.array([0.04, 0.05, 0.06, 0.6, 0.7]))
    assert (lower, split, upper) == pytest.approx((0.05, 0.33, 0.65))
    assert otsu_split(np.array([0.2, 0.2])) is None


def test_cut_points_come_from_the_clicks_and_fall_back_to_the_stated_defaults():
    rng = np.random.default_rng(0)
    estimates = np.r_[rng.normal(0.05, 0.01, 200), rng.normal(0.6, 0.05, 30)]
    found = derive_thresholds(estimates)
    b, t, h = found.base_rate, found.split, found.chosen_rate
    assert found.source == "data" and found.cutpoints == pytest.approx(((b + t) / 2, t, h))
    assert b == pytest.approx(0.05, abs=0.01) and h == pytest.approx(0.6, abs=0.03)
    assert "base rate 0.05" in found.words()
    few = derive_thresholds(estimates[:5])
    assert few.source == "default" and few.cutpoints == DEFAULT_CUTPOINTS and "fewer than the 20" in few.reason
    alike = derive_thresholds(rng.normal(0.3, 0.02, 100))
    assert alike.source == "default" and "do not split into two groups" in alike.reason


def _log(theta: np.ndarray, alpha: np.ndarray, positions: list[list[int]], shown: int,
         rng: np.random.Generator) -> ClickCounts:
    pair, position, impressions, clicks = [], [], [], []
    for i, places in enumerate(positions):
        for p in places:
            pair.append(i), position.append(p), impressions.append(shown)
            clicks.append(rng.binomial(shown, theta[p] * alpha[i]))
    return ClickCounts.of(pair, position, impressions, clicks, len(positions))


def test_one_rankers_log_takes_the_default_and_says_why():
    rng = np.random.default_rng(1)
    theta = np.r_[1.0, np.arange(1, 11) ** -0.7]
    counts = _log(theta, rng.uniform(0.05, 0.8, 300), [[1 + i % 10] for i in range(300)], 50, rng)
    bias = position_bias(counts)
    assert bias.source == "default" and bias.theta == pytest.approx(default_theta(10))
    assert "the default 1/p" in bias.reason and bias.pairs == 0


def test_interventions_give_the_position_bias_however_few_times_each_pair_was_seen():
    # Every pair shown at two random positions, only 20 times at each: too few to fit an
    # attractiveness per pair without bias, plenty for the estimating equations.
    rng = np.random.default_rng(2)
    theta = np.r_[1.0, np.arange(1, 11) ** -0.7]
    alpha = rng.uniform(0.05, 0.8, 3000)
    positions = [sorted(rng.choice(np.arange(1, 11), 2, replace=False).tolist()) for _ in alpha]
    counts = _log(theta, alpha, positions, 20, rng)
    bias = position_bias(counts)
    assert bias.source == "interventions" and bias.pairs == 3000
    assert bias.theta[1:] == pytest.approx(theta[1:], rel=0.1)
    _, joint = fit_pbm(counts, prior=0.0)  # what fitting both together gives on the same counts
    assert np.abs(bias.theta[1:] / theta[1:] - 1).max() < np.abs(joint[1:] / theta[1:] - 1).max()


def test_positions_no_intervention_joins_keep_the_default():
    rng = np.random.default_rng(3)
    theta = np.r_[1.0, np.arange(1, 7) ** -1.0]
    # Positions 1-3 swap among themselves; 4-6 among themselves: nothing joins them to position 1.
    positions = [[1, 2], [2, 3], [4, 5], [5, 6]] * 50
    counts = _log(theta, rng.uniform(0.2, 0.8, len(positions)), positions, 40, rng)
    bias = position_bias(counts)
    assert bias.source == "default" and "4-6" in bias.reason


def test_a_pair_clicked_at_the_base_rate_is_graded_zero_and_examinations_decide_what_is_judged():
    rng = np.random.default_rng(4)
    theta = np.r_[1.0, np.arange(1, 11) ** -1.0]
    relevant = rng.uniform(size=1000) < 0.15
    alpha = np.where(relevant, 0.6, 0.05)
    positions = [[1 + i % 10] for i in range(1000)]
    counts = _log(theta, alpha, positions, 200, rng)
    found = click_grades(counts, "pbm", min_examinations=10)
    assert found.position_bias.source == "default" and found.thresholds.source == "data"
    judged = found.judged
    assert (found.grades[judged & ~relevant] == 0).mean() > 0.98
    assert (found.grades[judged & relevant] >= 2).mean() > 0.95
    # 200 impressions at position p are 200/p examinations: all judged at 10; at 25, positions 9 and 10 are not.
    assert judged.all()
    strict = click_grades(counts, "pbm", min_examinations=25)
    assert not strict.judged[[i for i, p in enumerate(positions) if p[0] >= 9]].any()
    assert strict.judged[[i for i, p in enumerate(positions) if p[0] <= 8]].all()
