"""The metrics for incomplete judgments, by hand: bpref, the condensed NDCG, ERR, RBP and its
residual, infAP and R-precision, and the names they are asked for by (ours and ir_measures')."""

from __future__ import annotations

import random

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics import (
    METRIC_NAMES,
    METRICS,
    REGISTRY,
    MetricSpec,
    compute_metrics,
    higher_is_better,
    parse_metric,
)
from searchgrade.engine.metrics.average_precision import average_precision
from searchgrade.engine.metrics.bpref import bpref
from searchgrade.engine.metrics.err import err
from searchgrade.engine.metrics.infap import infap
from searchgrade.engine.metrics.ndcg import ndcg
from searchgrade.engine.metrics.ndcg_judged import ndcg_judged
from searchgrade.engine.metrics.r_precision import r_precision
from searchgrade.engine.metrics.rbp import rbp, rbp_residual

# bpref


def test_bpref_counts_judged_nonrelevant_results_above_each_relevant_one():
    # R = 2 (grades 2, 3), N = 3 (0, 0, 1); the hole and the -1 are skipped.
    # 2 at rank 2: no judged non-relevant above -> 1; 3 at rank 5: one above -> 1 - 1/min(3, 2).
    assert bpref([None, 2, 0, -1, 3], [2, 3, 0, 0, 1, -1], 10, 2) == pytest.approx(0.75)


def test_bpref_does_not_punish_unjudged_results():
    assert bpref([None, None, 2], [2, 0], 10, 2) == bpref([2], [2, 0], 10, 2) == 1.0
    assert ndcg([None, None, 2], [2, 0], 10, 2) < 1.0


def test_bpref_reads_a_negative_grade_as_pooled_but_not_judged_as_trec_eval_does():
    assert bpref([-1, 2], [-1, 2, 0], 10, 2) == 1.0  # the -1 is skipped, not a non-relevant one
    assert bpref([0, 2], [0, 2, 0], 10, 2) == 0.0


def test_bpref_is_zero_without_a_relevant_document():
    assert bpref([0, 1, None], [0, 1], 10, 2) == 0.0


# The condensed NDCG


def test_condensed_ndcg_removes_the_holes_before_cutting_at_k():
    assert ndcg_judged([None, 3, -1, 2], [3, 2], 2, 2) == 1.0
    assert ndcg([None, 3, -1, 2], [3, 2], 2, 2) < 0.5
    # A judged result from below k moves up into the condensed top k.
    assert ndcg_judged([None, None, 3], [3], 1, 2) == 1.0


def test_condensed_ndcg_equals_ndcg_when_every_result_is_judged():
    rng = random.Random(1)
    for _ in range(100):
        pool = [rng.randint(0, 3) for _ in range(rng.randint(1, 12))]
        grades = rng.sample(pool, rng.randint(0, len(pool)))
        assert ndcg_judged(grades, pool, 5, 2) == ndcg(grades, pool, 5, 2)


# ERR


def test_err_follows_the_cascade_with_the_scales_top_grade():
    # Grades 3, 2, 0, 1 on a 0-4 scale: R = 7/16, 3/16, 0, 1/16.
    expected = 7 / 16 + (3 / 16) * (9 / 16) / 2 + (1 / 16) * (9 / 16) * (13 / 16) / 4
    assert err([3, 2, 0, 1], [], 10, 2, max_grade=4) == pytest.approx(expected, abs=1e-12)
    assert err([3], [], 10, 2, max_grade=3) == 7 / 8  # the judge's top grade stops 7 readers in 8
    assert err([1], [], 10, 1, max_grade=1) == 0.5  # binary labels


def test_err_counts_holes_as_zero_gain_and_clips_grades_above_the_scale():
    assert err([None, -1, 3], [], 10, 2, max_grade=3) == pytest.approx(7 / 8 / 3)
    assert err([5], [], 10, 2, max_grade=3) == err([3], [], 10, 2, max_grade=3)


def test_err_without_a_scale_takes_the_largest_known_grade():
    assert err([2], [3, 2], 10, 2) == err([2], [], 10, 2, max_grade=3)


# RBP and its residual


def test_rbp_is_the_persistence_weighted_share_of_relevant_results():
    assert rbp([2, 0, 2], [], 10, 2) == pytest.approx(0.2 * (1 + 0.8**2))
    assert rbp([2, 0, 2], [], 10, 2, p=0.5) == pytest.approx(0.5 * (1 + 0.25))


def test_rbp_residual_adds_the_holes_and_the_tail_below_a_full_list():
    # The hole at rank 2, and the ranks below 3 (the list reaches k = 3).
    assert rbp_residual([2, None, 2], [], 3, 2) == pytest.approx(0.2 * 0.8 + 0.8**3)
    # No judged result is non-relevant: RBP plus its residual is the whole weight.
    assert rbp([2, None, 2], [], 3, 2) + rbp_residual([2, None, 2], [], 3, 2) == pytest.approx(1.0)
    assert rbp_residual([2, -1, 0], [], 3, 2) == pytest.approx(0.2 * 0.8 + 0.8**3)


def test_rbp_residual_of_a_list_shorter_than_k_has_no_tail():
    # Everything the strategy returned: nothing below it can be relevant.
    assert rbp_residual([2, None, 2], [], 5, 2) == pytest.approx(0.2 * 0.8)
    assert rbp_residual([0, 2], [], 5, 2) == 0.0


# infAP


def test_infap_averages_its_estimate_of_precision_at_each_relevant_result():
    # The -1 at rank 1 is pooled but not judged: precision at rank 2 is estimated at 1/2 + 1/2 * 1/2.
    assert infap([-1, 2], [-1, 2], 10, 2) == pytest.approx(0.75, abs=1e-9)
    # A result outside the pool (no grade) above it counts as not relevant.
    assert infap([None, 2], [2], 10, 2) == pytest.approx(0.5, abs=1e-9)


def test_infap_is_ap_when_every_pooled_result_was_judged():
    rng = random.Random(2)
    for _ in range(100):
        pool = [rng.randint(0, 3) for _ in range(rng.randint(1, 12))]
        grades = rng.sample(pool, len(pool))
        assert infap(grades, pool, 10, 2) == pytest.approx(average_precision(grades, pool, 10, 2), abs=1e-4)


# R-precision


def test_r_precision_is_precision_at_the_number_of_relevant_documents():
    assert r_precision([2, 0, 2], [2, 2, 0], 10, 2) == 0.5  # R = 2: one of the top 2
    assert r_precision([2], [2, 2, 3], 10, 2) == pytest.approx(1 / 3)  # a list shorter than R
    assert r_precision([0, 1], [0, 1], 10, 2) == 0.0


# Which metrics read holes


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_unjudged_aware_metrics_are_exactly_those_where_a_hole_differs_from_zero(name):
    rng = random.Random(7)
    differs = False
    for _ in range(300):
        pool = [rng.randint(0, 3) for _ in range(rng.randint(1, 10))]
        grades = [rng.choice([None, *pool]) for _ in range(rng.randint(1, 12))]
        zeros = [0 if g is None else g for g in grades]
        differs |= METRICS[name](grades, pool, 5, 2) != pytest.approx(METRICS[name](zeros, pool, 5, 2))
    assert differs == REGISTRY[name].unjudged


def test_rbp_residual_is_the_one_new_metric_where_less_is_better():
    assert not higher_is_better("rbp_residual") and not higher_is_better("rbp_residual(p=0.9)")
    assert all(higher_is_better(m) for m in ("bpref", "ndcg_judged", "err", "rbp", "infap", "r_precision"))


# Names, in our syntax and ir_measures'


@pytest.mark.parametrize(("text", "spec"), [
    ("bpref", MetricSpec("bpref")),
    ("Bpref(rel=2)", MetricSpec("bpref", rel=2)),
    ("nDCG(judged_only=True)@10", MetricSpec("ndcg_judged", 10)),
    ("ndcg_judged@5", MetricSpec("ndcg_judged", 5)),
    ("nDCG(judged_only=False)@10", MetricSpec("ndcg", 10)),
    ("ERR@20", MetricSpec("err", 20)),
    ("RBP(rel=2,p=0.8)", MetricSpec("rbp", None, 0.8, 2)),
    ("rbp(p=0.9)@10", MetricSpec("rbp", 10, 0.9)),
    ("rbp_residual", MetricSpec("rbp_residual")),
    ("infAP(rel=1)", MetricSpec("infap", rel=1)),
    ("Rprec", MetricSpec("r_precision")),
    ("P(rel=2)@5", MetricSpec("precision", 5, rel=2)),
    ("AP@10", MetricSpec("map", 10)),
    ("RR", MetricSpec("mrr")),
])
def test_parse_metric_reads_ir_measures_names_and_parameters(text, spec):
    assert parse_metric(text) == spec


def test_a_persistence_other_than_the_default_is_part_of_the_metrics_key():
    assert parse_metric("RBP(rel=2,p=0.8)").key == "rbp"
    assert parse_metric("rbp(p=0.9)@10").label == "rbp(p=0.9)@10"
    assert compute_metrics([2, 0, 2], [2], 10, 2, ["rbp(p=0.5)"]) == {"rbp(p=0.5)": pytest.approx(0.625)}


def test_a_bare_whole_list_metric_means_the_runs_depth():
    assert parse_metric("bpref").resolve_k(10, depth=100) == 100
    assert parse_metric("bpref@10").resolve_k(10, depth=100) == 10
    assert parse_metric("ndcg_judged").resolve_k(10, depth=100) == 10
    assert {"bpref", "rbp", "rbp_residual", "infap", "r_precision"} == {m for m in REGISTRY if REGISTRY[m].whole_list}


@pytest.mark.parametrize(("text", "says"), [
    ("rbp(p=1.5)", "between 0 and 1"),
    ("rbp(p=x)", "between 0 and 1"),
    ("bpref(rel=0)", "positive grade"),
    ("err(rel=2)", "err takes no parameter"),
    ("ndcg(p=0.8)", "ndcg takes judged_only"),
    ("rbp(q=1)", "rbp takes p, rel"),
    ("rbp(p)", "needs a value"),
])
def test_parse_metric_rejects_bad_parameters_in_one_line(text, says):
    with pytest.raises(SearchGradeError) as error:
        parse_metric(text)
    assert says in str(error.value) and "\n" not in str(error.value) and f'"{text}"' in str(error.value)


def test_a_rel_other_than_the_runs_threshold_is_refused_with_the_fix():
    parse_metric("RBP(rel=2)").check_threshold(2)
    with pytest.raises(SearchGradeError, match="use rel=2 or leave rel out"):
        parse_metric("RBP(rel=3)").check_threshold(2)
