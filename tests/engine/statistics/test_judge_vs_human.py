"""The LLM judge against people: agreement stored with a run, and with CIs for the Trust page."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.engine.statistics.judge_vs_human import judge_human_agreement, judge_vs_human


def test_agreement_uses_shared_pairs_and_skips_failures():
    judge = {("q1", "a"): 3, ("q1", "b"): 0, ("q1", "c"): None, ("q2", "a"): 2}
    human = {("q1", "a"): 1, ("q1", "b"): 0, ("q1", "c"): 1, ("q3", "x"): 1}
    result = judge_human_agreement(judge, human)
    assert result.n == 2
    assert result.labels == [0, 1, 3]
    assert result.confusion == [[1, 0, 0], [0, 0, 0], [0, 1, 0]]
    assert result.kappa_binary == pytest.approx(1.0)  # 3 >= 2 with 1 >= 1, 0 with 0
    assert result.exact == pytest.approx(0.5)


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
