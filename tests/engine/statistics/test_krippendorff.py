"""Krippendorff's alpha: the published example and hand-computed ones."""

from __future__ import annotations

import pytest

from searchgrade.engine.statistics.krippendorff import krippendorff_alpha

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
