"""The statistics behind trust in the grades: Holm, the one-sided paired test of the gate,
prediction-powered inference, Krippendorff's alpha and judge-vs-human agreement with CIs."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.engine.metrics import dcg
from searchgrade.engine.statistics.agreement import judge_vs_human
from searchgrade.engine.statistics.bootstrap import bootstrap_ci, holm, non_inferiority_test
from searchgrade.engine.statistics.krippendorff import krippendorff_alpha
from searchgrade.engine.statistics.ppi import ppi_mean

# -- Holm


def test_holm_hand_example():
    # sorted 0.01, 0.02, 0.04 -> 3 * 0.01 = 0.03, 2 * 0.02 = 0.04, 1 * 0.04 = 0.04 (kept monotone)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])


def test_holm_caps_at_one_and_keeps_one_value():
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([0.2]) == [0.2]
    assert holm([]) == []
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([1.5])


# -- the gate's one-sided paired test


def test_identical_values_are_never_worse():
    values = np.random.default_rng(0).uniform(0, 1, 200)
    test = non_inferiority_test(values, values, margin=0.01)
    assert test.diff == 0.0 and test.p_value > 0.99
    assert non_inferiority_test(values, values, margin=0.0).p_value == 1.0


def test_a_clearly_worse_candidate_has_a_small_p_value():
    rng = np.random.default_rng(1)
    baseline = rng.uniform(0.3, 0.9, 200)
    candidate = baseline - 0.1 + rng.normal(0, 0.05, 200)
    test = non_inferiority_test(candidate, baseline, margin=0.01)
    assert test.diff == pytest.approx(-0.1, abs=0.01)
    assert test.ci_high < -0.01
    assert test.p_value < 0.001


def test_a_drop_within_the_margin_passes():
    rng = np.random.default_rng(2)
    baseline = rng.uniform(0.3, 0.9, 300)
    candidate = baseline - 0.005 + rng.normal(0, 0.01, 300)
    assert non_inferiority_test(candidate, baseline, margin=0.02).p_value > 0.5


def test_exact_one_sided_p_value_on_three_queries():
    # d + margin = [-1, -1, -1]: of the 8 sign assignments only the observed one sums to -3 -> 1/8
    assert non_inferiority_test([0, 0, 0], [1, 1, 1], margin=0.0).p_value == pytest.approx(1 / 8)


def test_non_inferiority_rejects_bad_input():
    with pytest.raises(ValueError, match="margin"):
        non_inferiority_test([1.0], [1.0], margin=-0.1)
    with pytest.raises(ValueError, match="paired"):
        non_inferiority_test([1.0, 2.0], [1.0])


# -- prediction-powered inference


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


# -- Krippendorff's alpha

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers, 12 units,
# values 1-5, missing ratings. Published: nominal 0.743, ordinal 0.815, interval 0.849.
_OBSERVERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
_UNITS = [[v for v in unit if v is not None] for unit in zip(*_OBSERVERS, strict=True)]


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_alpha_matches_the_published_example(level, published):
    est = krippendorff_alpha(_UNITS, level)
    assert est.alpha == pytest.approx(published, abs=5e-4)
    assert est.n_units == 11  # unit 12 has one rating: not pairable
    assert est.ci_low <= est.alpha <= est.ci_high


def test_krippendorff_alpha_hand_example():
    # Units (0,0), (1,1), (0,1): o = [[2,1],[1,2]], n_0 = n_1 = 3, n = 6.
    # alpha = 1 - (n - 1) * sum o d / sum n_c n_k d = 1 - 5 * 2 / 18 = 4/9 (any level: two values)
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha([[0, 0], [1, 1], [0, 1]], level).alpha == pytest.approx(4 / 9)


def test_krippendorff_alpha_ordinal_weighs_steps_by_how_often_grades_occur():
    # Units (0,1), (1,2), (2,2), (0,0): n_0 = 3, n_1 = 2, n_2 = 3, n = 8; o_01 = o_10 = o_12 = o_21 = 1.
    # d(0,1) = (3 + 2 - 2.5)^2 = 6.25 = d(1,2); d(0,2) = (8 - 3)^2 = 25.
    # observed = 4 * 6.25 = 25; expected = 2 * (3*2*6.25 + 2*3*6.25 + 3*3*25) = 600
    # alpha = 1 - 7 * 25 / 600 = 0.708333
    est = krippendorff_alpha([[0, 1], [1, 2], [2, 2], [0, 0]], "ordinal")
    assert est.alpha == pytest.approx(1 - 7 * 25 / 600)


def test_krippendorff_alpha_is_undefined_with_one_value_or_no_pairs():
    assert krippendorff_alpha([[2, 2], [2, 2]]).alpha is None
    assert krippendorff_alpha([[1], [2]]).alpha is None


# -- judge vs human with CIs


def test_weighted_kappa_bias_and_confusion_hand_example():
    # judge [0,1,2,3] vs human [0,2,2,3] on the 0-3 scale.
    # linear: observed 1/12, expected 5/12 -> 0.8; quadratic: observed 1/36, expected 10/36 -> 0.9
    pairs = [("q1", 0, 0), ("q1", 1, 2), ("q2", 2, 2), ("q2", 3, 3)]
    result = judge_vs_human(pairs)
    assert result.kappa_linear.value == pytest.approx(0.8)
    assert result.kappa_quadratic.value == pytest.approx(0.9)
    assert result.exact.value == pytest.approx(0.75)
    assert result.bias.value == pytest.approx(-0.25)
    assert result.confusion == [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    # Of the two pairs people graded 2, the judge gave 1 to one and 2 to the other.
    assert result.column_share[1][2].value == pytest.approx(0.5)
    assert (result.n_pairs, result.n_queries) == (4, 2)


def test_judge_vs_human_intervals_contain_the_estimate_and_narrow_with_more_queries():
    rng = np.random.default_rng(3)

    def pairs(n_queries):
        out = []
        for q in range(n_queries):
            for _ in range(5):
                human = int(rng.integers(0, 4))
                out.append((q, int(np.clip(human + rng.choice([0, 0, 1, -1]), 0, 3)), human))
        return out

    small, large = judge_vs_human(pairs(10)), judge_vs_human(pairs(200))
    for r in (small, large):
        assert r.kappa_linear.low <= r.kappa_linear.value <= r.kappa_linear.high
        assert r.bias.low <= r.bias.value <= r.bias.high
    assert (large.kappa_linear.high - large.kappa_linear.low) < (small.kappa_linear.high - small.kappa_linear.low) / 2


def test_judge_vs_human_without_pairs_is_empty_and_rejects_off_scale_grades():
    assert judge_vs_human([]).n_pairs == 0
    with pytest.raises(ValueError, match="scale"):
        judge_vs_human([("q", 4, 1)])
