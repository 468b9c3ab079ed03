"""Decision agreement: a proxy's verdicts and system order against people's, with intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from searchgrade.engine.statistics.decisions import (
    PairVerdict,
    agreement_difference,
    compare_gradings,
)
from searchgrade.engine.statistics.paired import PairedDifference


def _systems(n: int = 30, seed: int = 0) -> dict[str, list[float]]:
    """Three systems a clear step apart, and one indistinguishable from the best."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    return {"weak": (base + rng.normal(scale=0.1, size=n)).tolist(),
            "middle": (base + 1 + rng.normal(scale=0.1, size=n)).tolist(),
            "best": (base + 2 + rng.normal(scale=0.1, size=n)).tolist(),
            "best_twin": (base + 2 + rng.normal(scale=0.1, size=n)).tolist()}


def test_a_proxy_that_grades_as_people_agrees_on_every_decision():
    people = _systems()
    result = compare_gradings(people, {"same": people}, outer_resamples=20).by_proxy["same"]
    assert result.tau.value == pytest.approx(1.0)
    assert (result.tau.low, result.tau.high) == (pytest.approx(1.0), pytest.approx(1.0))
    assert result.agreement == (1.0, 1.0, 1.0)
    assert result.compared == 6 and result.agreeing == 6 and not result.differing
    kinds = {(v.a, v.b): v.kind for v in result.verdicts}
    assert kinds[("weak", "middle")] == "same winner"
    assert kinds[("best", "best_twin")] == "neither"


def test_a_reversed_proxy_reverses_every_clear_decision():
    people = _systems()
    reversed_ = {s: [-v for v in values] for s, values in people.items()}
    result = compare_gradings(people, {"upside down": reversed_}, outer_resamples=20).by_proxy["upside down"]
    assert result.tau.value == pytest.approx(-1.0, abs=0.2)
    kinds = {(v.a, v.b): v.kind for v in result.verdicts}
    assert kinds[("weak", "best")] == "reversal"
    assert kinds[("best", "best_twin")] == "neither"
    # 5 of the 6 comparisons are clear to people and reversed; the twins are "neither" on both sides.
    assert result.agreement.value == pytest.approx(1 / 6)
    assert {(v.a, v.b) for v in result.differing} == set(kinds) - {("best", "best_twin")}


def test_a_noisy_proxy_has_an_interval_around_its_agreement():
    people = _systems(n=40)
    rng = np.random.default_rng(5)
    noisy = {s: (np.array(v) + rng.normal(scale=2.0, size=len(v))).tolist() for s, v in people.items()}
    result = compare_gradings(people, {"noisy": noisy}, outer_resamples=60).by_proxy["noisy"]
    assert result.agreement.low <= result.agreement.value <= result.agreement.high
    assert result.agreement.low < result.agreement.high


def test_below_the_minimums_the_figures_say_why_instead_of_a_number():
    few = {s: v[:4] for s, v in _systems().items()}
    result = compare_gradings(few, {"j": few}).by_proxy["j"]
    assert result.agreement.value is None and result.verdicts == []
    assert any("needs at least" in n for n in result.notes)
    two = {s: v for s, v in _systems().items() if s in ("weak", "best")}
    result = compare_gradings(two, {"j": two}, outer_resamples=5).by_proxy["j"]
    assert result.tau.value is None
    assert any("at least 3 systems" in n for n in result.notes)
    assert result.agreement.value == 1.0  # one comparison, enough queries for its verdict


def test_two_proxies_share_the_outer_draw_so_their_difference_has_an_interval():
    people = _systems(n=40)
    rng = np.random.default_rng(9)
    noisy = {s: (np.array(v) + rng.normal(scale=3.0, size=len(v))).tolist() for s, v in people.items()}
    decisions = compare_gradings(people, {"same": people, "noisy": noisy}, outer_resamples=60)
    assert agreement_difference(decisions, "same", "same") == (0.0, 0.0, 0.0)
    diff = agreement_difference(decisions, "same", "noisy")
    assert diff.value == pytest.approx(decisions.by_proxy["same"].agreement.value
                                       - decisions.by_proxy["noisy"].agreement.value)
    assert diff.low <= diff.value <= diff.high


def test_the_winner_follows_the_metrics_direction():
    significant = PairedDifference(0.2, 0.1, 0.3, 0.01, 30, 1)
    flat = PairedDifference(0.0, -0.1, 0.1, 1.0, 30, 1)
    higher = PairVerdict("a", "b", significant, significant, True)
    lower = PairVerdict("a", "b", significant, flat, False)
    assert higher.people_winner == "a" and higher.kind == "same winner"
    assert lower.people_winner == "b" and lower.proxy_winner is None and lower.kind == "people only"
    assert PairVerdict("a", "b", flat, significant).kind == "proxy only"
    nan = PairedDifference(0.1, math.nan, math.nan, 1.0, 3, 1)
    assert PairVerdict("a", "b", nan, nan).kind == "neither"


def test_proxies_must_score_the_same_systems_and_queries():
    people = _systems()
    with pytest.raises(ValueError, match="same systems"):
        compare_gradings(people, {"j": {"weak": people["weak"]}})
    with pytest.raises(ValueError, match="one value per query"):
        compare_gradings(people, {"j": {s: v[:-1] for s, v in people.items()}})
    with pytest.raises(ValueError, match="not among the systems"):
        compare_gradings(people, {"j": people}, comparisons=[("weak", "nobody")])
