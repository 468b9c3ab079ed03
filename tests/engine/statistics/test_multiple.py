"""Holm's adjustment of a family of p-values."""

from __future__ import annotations

import pytest

from searchgrade.engine.statistics.multiple import holm


def test_holm_matches_hand_computed_adjustments():
    # sorted: 0.01 * 3 = 0.03; 0.02 * 2 = 0.04; 0.04 * 1 = 0.04 (kept monotone)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])


def test_holm_caps_at_one_keeps_one_value_and_rejects_a_p_outside_0_1():
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([0.2]) == [0.2]
    assert holm([]) == []
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([1.5])
