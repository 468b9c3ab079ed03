"""The rule for comparisons over judgments with holes (engine/statistics/holes.py), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.engine.statistics.holes import (
    Sides,
    condensed_lists,
    judges_what_it_saw,
    reading,
    rule_metric,
    withheld_reason,
)
from searchgrade.engine.statistics.pairing import compare_with_holes, differences


@pytest.mark.parametrize("judged_a, judged_b, expected", [
    (1.0, 0.95, "plain"), (0.9, 0.9, "plain"),  # both within the tolerance of complete
    (1.0, 0.6, "condensed"), (0.6, 0.56, "condensed"),  # apart, or both with many holes
    (1.0, 0.49, "withheld"), (0.3, 0.3, "withheld"),  # a side mostly unjudged
])
def test_the_rule_reads_the_judged_shares(judged_a, judged_b, expected):
    assert reading(judged_a, judged_b) == expected


def test_condensed_lists_keep_each_top_ks_judged_results_as_many_from_each():
    a = [3, None, 0, None, 2, 1]
    b = [None, 2, -1, 0, None, None]  # -1: pooled but not judged, a hole as trec_eval reads it
    assert condensed_lists(a, b, k=5) == ([3, 0], [2, 0])
    assert condensed_lists(a, [None, None], k=5) == ([], [])


def test_a_withheld_comparison_is_no_test_and_does_not_count_in_the_family():
    rng = np.random.default_rng(0)
    n = 40
    strong, weak = rng.uniform(1, 2, n), rng.uniform(0, 1, n)
    full, half, low = np.ones(n), np.full(n, 0.6), np.full(n, 0.2)
    sides = [Sides(strong, weak, full, full, lambda: (_ for _ in ()).throw(AssertionError("not condensed"))),
             Sides(strong, weak, full, low, lambda: (strong, weak)),
             Sides(strong, weak, full, half, lambda: (weak[:30], strong[:30]))]
    reasons = [lambda ja, jb, i=i: f"reason {i} {ja:.1f} {jb:.1f}" for i in range(3)]
    plain, held, condensed = compare_with_holes(sides, reasons)
    assert not plain.condensed and plain.withheld is None and plain.significant
    assert held.difference is None and held.withheld == "reason 1 1.0 0.2" and not held.significant
    assert condensed.condensed and condensed.difference.n == 30 and condensed.difference.diff < 0
    # Two tests, not three: each interval is adjusted for m = 2, as the one procedure gives it.
    assert plain.difference == differences([(strong, weak), (weak[:30], strong[:30])], m=2)[0]
    assert (condensed.mean_a, condensed.mean_b) == pytest.approx((weak[:30].mean(), strong[:30].mean()))


def test_a_pair_and_its_reverse_are_one_comparison():
    a, b = np.arange(10.0), np.arange(10.0)[::-1]
    full = np.ones(10)
    sides = [Sides(a, b, full, full, lambda: (a, b)), Sides(b, a, full, full, lambda: (b, a))]
    first, second = compare_with_holes(sides, [str, str], keys=[frozenset("xy"), frozenset("xy")])
    assert first.difference.m == second.difference.m == 1


def test_where_the_rule_applies():
    assert judges_what_it_saw("clicks", False) and judges_what_it_saw("llm", False)
    assert judges_what_it_saw("clicks+llm", False) and judges_what_it_saw("human+clicks", False)
    # People's labels: those that mark what they left unjudged have holes; others count an absent
    # result as not relevant by their collection's convention.
    assert judges_what_it_saw("human", True) and not judges_what_it_saw("human", False)
    assert rule_metric("dcg") and rule_metric("ndcg") and rule_metric("rbp(p=0.9)")
    assert not any(rule_metric(m) for m in ("judged", "bpref", "ndcg_judged", "rbp_residual", "source_found"))


def test_the_reason_names_the_less_judged_side_and_the_way_out():
    text = withheld_reason("Full-text", "Hybrid", 0.95, 0.31, 10)
    assert text.startswith("31% of Hybrid's top 10 is judged (Full-text: 95%)")
    assert "--judge-unjudged" in text and "Fill the holes" in text
