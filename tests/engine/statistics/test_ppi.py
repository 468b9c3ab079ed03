"""Prediction-powered inference: a hand example, and coverage against a known truth."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.engine.metrics import dcg
from searchgrade.engine.statistics.bootstrap import bootstrap_ci
from searchgrade.engine.statistics.ppi import ppi_mean


def test_ppi_hand_example():
    # LLM mean over 4 = 1.5; rated items 0 and 1: human - judge = 1 and 0 -> correction 0.5
    est = ppi_mean([1.0, 2.0, 1.0, 2.0], [2.0, 2.0, None, None])
    assert est.llm_mean == pytest.approx(1.5)
    assert est.correction == pytest.approx(0.5)
    assert est.estimate == pytest.approx(2.0)
    assert (est.n_rated, est.n_all) == (2, 4)
    assert est.ci_low < 2.0 < est.ci_high


def test_ppi_needs_two_rated_items():
    with pytest.raises(ValueError, match="at least 2"):
        ppi_mean([1.0, 2.0], [1.0, None])


def _population(rng: np.random.Generator, size: int, k: int = 10):
    """Per query, DCG@k under true grades and under a biased, noisy judge's grades."""
    difficulty = rng.uniform(0, 1, size)
    true = np.clip(np.round(rng.normal(3 * (1 - difficulty)[:, None] - 0.5, 1.0, (size, k))), 0, 3).astype(int)
    # The judge grades one point high 60% of the time and is off by one either way 20% of the time.
    judged = true + (rng.uniform(size=true.shape) < 0.6) + rng.choice([-1, 0, 0, 0, 0, 0, 0, 0, 0, 1], true.shape)
    judged = np.clip(judged, 0, 3)
    truth = np.array([dcg(list(row), [], k, 2) for row in true])
    llm = np.array([dcg(list(row), [], k, 2) for row in judged])
    return truth, llm


def test_ppi_interval_covers_the_truth_about_95_percent_where_the_llm_only_one_does_not():
    """Known truth, a biased noisy judge: 400 queries judged, 40 of them rated by people, 300 times."""
    rng = np.random.default_rng(7)
    truth_values, llm_values = _population(rng, 20_000)
    truth = truth_values.mean()
    assert llm_values.mean() - truth > 0.5  # the judge is biased upwards
    n_sim, n_all, n_rated = 300, 400, 40
    covered_ppi = covered_llm = 0
    widths = []
    for _ in range(n_sim):
        sample = rng.choice(len(truth_values), n_all, replace=False)
        rated = rng.choice(n_all, n_rated, replace=False)
        human = np.full(n_all, np.nan)
        human[rated] = truth_values[sample[rated]]
        est = ppi_mean(llm_values[sample], human)
        covered_ppi += est.ci_low <= truth <= est.ci_high
        widths.append(est.ci_high - est.ci_low)
        llm_only = bootstrap_ci(llm_values[sample], n_resamples=500, seed=int(rng.integers(1 << 30)))
        covered_llm += llm_only.low <= truth <= llm_only.high
    assert 0.92 <= covered_ppi / n_sim <= 0.98
    assert covered_llm / n_sim < 0.2
    # Narrower than the classical interval from the 40 rated queries alone would be.
    classical = 2 * 1.96 * truth_values.std() / np.sqrt(n_rated)
    assert np.mean(widths) < classical
