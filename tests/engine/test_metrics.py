"""Metric functions: hand-computed values, edge cases, the registry and the name syntax."""

from __future__ import annotations

import math
import random

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics import (
    METRIC_NAMES,
    METRICS,
    REGISTRY,
    MetricSpec,
    compute_metrics,
    parse_metric,
)
from searchgrade.engine.metrics.average_precision import average_precision
from searchgrade.engine.metrics.dcg import dcg
from searchgrade.engine.metrics.judged import judged
from searchgrade.engine.metrics.ndcg import ndcg
from searchgrade.engine.metrics.precision import precision
from searchgrade.engine.metrics.recall import recall, recall_single_hit
from searchgrade.engine.metrics.reciprocal_rank import reciprocal_rank
from searchgrade.engine.metrics.record import IDEAL, TOP_GRADE, ideal_gain_bound
from searchgrade.engine.metrics.relevance import (
    mean_relevance,
    pct_highly_relevant,
    pct_not_relevant,
    pct_relevant,
)

LOG2_3 = math.log2(3)  # discount at rank 2


# DCG


@pytest.mark.parametrize(
    ("grades", "expected"),
    [([3, 2, 0, 0, 0], 4.26), ([3, 3, 3, 2, 2], 8.03), ([3] * 10, 13.63)],
)
def test_dcg_matches_the_worked_examples_in_the_product_brief(grades, expected):
    assert dcg(grades, [], 10, 2) == pytest.approx(expected, abs=0.005)


def test_dcg_uses_linear_gain_and_log2_discount():
    # 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.26186 + 0.5
    assert dcg([3, 2, 1], [], 3, 2) == pytest.approx(4.76186, abs=1e-5)


def test_dcg_counts_only_the_first_k_results():
    assert dcg([3, 3, 3], [], 1, 2) == pytest.approx(3.0)


def test_dcg_counts_an_unknown_grade_as_zero():
    assert dcg([None, 3], [], 10, 2) == pytest.approx(3 / LOG2_3)


# NDCG


def test_ndcg_divides_by_the_dcg_of_the_pool_sorted_in_decreasing_order():
    # DCG = 2 + 3/log2(3) = 3.89279; ideal = 3 + 2/log2(3) + 1/2 = 4.76186
    assert ndcg([2, 3, 0], [1, 3, 2, 0], 3, 2) == pytest.approx(0.81750, abs=1e-5)


def test_ndcg_ideal_keeps_only_the_top_k_of_the_pool():
    # ideal@2 = 3 + 3/log2(3); the third 3 in the pool is below the cutoff
    assert ndcg([3, 3], [3, 3, 3], 2, 2) == pytest.approx(1.0)
    assert ndcg([0, 3], [3, 3, 3], 2, 2) == pytest.approx((3 / LOG2_3) / (3 + 3 / LOG2_3))


def test_ndcg_is_one_for_a_perfect_ranking_even_when_fewer_results_than_k():
    assert ndcg([3, 2], [2, 3], 10, 2) == pytest.approx(1.0)


def test_ndcg_is_zero_when_the_ideal_dcg_is_zero():
    assert ndcg([0, 0, None], [0, 0], 10, 2) == 0.0
    assert ndcg([], [], 10, 2) == 0.0


def test_ndcg_never_exceeds_one_when_the_retrieved_grades_come_from_the_pool():
    rng = random.Random(7)
    for _ in range(500):
        pool = [rng.randint(0, 3) for _ in range(rng.randint(1, 15))]
        retrieved = rng.sample(pool, rng.randint(0, len(pool)))
        grades = retrieved + [None] * rng.randint(0, 3)
        rng.shuffle(grades)
        value = ndcg(grades, pool, rng.randint(1, 12), 2)
        assert 0.0 <= value <= 1.0 + 1e-12


def test_ndcg_never_exceeds_one_when_the_pool_lacks_a_retrieved_grade():
    # The pool forgot the retrieved 3s: they join the ideal, and a perfect ranking scores 1.
    assert ndcg([3, 3], [2], 2, 2) == pytest.approx(1.0)
    rng = random.Random(11)
    for _ in range(500):
        grades = [rng.choice([None, 0, 1, 2, 3]) for _ in range(rng.randint(0, 12))]
        pool = [rng.randint(0, 3) for _ in range(rng.randint(0, 6))]
        assert 0.0 <= ndcg(grades, pool, rng.randint(1, 12), 2) <= 1.0 + 1e-12


# Precision, recall, reciprocal rank, average precision


def test_precision_divides_by_k_even_when_fewer_results_are_returned():
    assert precision([2, 0, 3], [], 10, 2) == pytest.approx(0.2)
    assert precision([2, 0, 3], [], 2, 2) == pytest.approx(0.5)


def test_precision_counts_grades_at_the_threshold_as_relevant():
    assert precision([1, 1], [], 2, 1) == pytest.approx(1.0)
    assert precision([1, 1], [], 2, 2) == 0.0


def test_recall_is_the_share_of_the_pools_relevant_grades_found_in_the_top_k():
    assert recall([2, 0, 3], [3, 2, 2, 2, 1], 10, 2) == pytest.approx(0.5)
    assert recall([2, 0, 3], [3, 2, 2, 2, 1], 1, 2) == pytest.approx(0.25)


def test_recall_is_zero_when_the_pool_has_no_relevant_grade():
    assert recall([1, 0], [1, 0], 10, 2) == 0.0
    assert recall([], [], 10, 2) == 0.0


def test_recall_never_exceeds_one_when_the_pool_lacks_a_retrieved_relevant_grade():
    assert recall([3, 3], [3], 10, 2) == pytest.approx(1.0)


def test_single_hit_recall_is_one_when_any_relevant_result_is_in_the_top_k():
    assert recall_single_hit([0, 1, 2], [2, 2, 2], 3, 2) == 1.0
    assert recall_single_hit([0, 1, 2], [2, 2, 2], 2, 2) == 0.0
    assert recall_single_hit([], [2], 10, 2) == 0.0


def test_reciprocal_rank_is_one_over_the_rank_of_the_first_relevant_result():
    assert reciprocal_rank([0, 1, 2, 3], [], 10, 2) == pytest.approx(1 / 3)
    assert reciprocal_rank([3], [], 10, 2) == pytest.approx(1.0)


def test_reciprocal_rank_is_zero_when_no_relevant_result_is_in_the_top_k():
    assert reciprocal_rank([0, 1, 2], [], 2, 2) == 0.0
    assert reciprocal_rank([None, None], [], 10, 2) == 0.0


def test_average_precision_divides_by_every_relevant_grade_in_the_pool():
    # relevant at ranks 1 and 3: (1/1 + 2/3) / 3 relevant in the pool
    assert average_precision([2, 0, 3, 0, 1], [3, 2, 2, 1, 0], 5, 2) == pytest.approx(5 / 9)


def test_average_precision_at_k_ignores_hits_below_k_but_keeps_the_full_denominator():
    # only rank 2 counts at k = 2: (1/2) / 2
    assert average_precision([0, 2, 2], [2, 2], 2, 2) == pytest.approx(0.25)


def test_average_precision_is_zero_when_the_pool_has_no_relevant_grade():
    assert average_precision([1, 0], [1, 1, 0], 10, 2) == 0.0


# Mean relevance, distribution, judged


def test_mean_relevance_divides_by_k_with_missing_places_as_zero():
    # Four results at k = 10: (3 + 0 + 2 + 1) / 10, never / 4.
    assert mean_relevance([3, None, 2, 1], [], 10, 2) == pytest.approx(0.6)
    assert mean_relevance([3, None, 2, 1], [], 2, 2) == pytest.approx(1.5)
    assert mean_relevance([3, 3, 3], [], 3, 2) == 3.0
    assert mean_relevance([], [], 10, 2) == 0.0


def test_a_short_list_is_never_rewarded():
    # The upload: one result graded 3 scored 3.00 against a full list's 0.36.
    one_good = mean_relevance([3], [], 10, 2)
    full_list = mean_relevance([3, 2, 1, 0, 0, 0, 0, 0, 0, 0], [], 10, 2)
    assert one_good == pytest.approx(0.3) and full_list == pytest.approx(0.6) and one_good < full_list
    assert pct_relevant([3], [], 10, 2) == pytest.approx(0.1)
    assert pct_relevant([3], [], 10, 2) == precision([3], [], 10, 2)


def test_relevance_shares_divide_by_the_k_places():
    grades = [3, 2, 1, 0, None]
    assert pct_highly_relevant(grades, [], 10, 2) == pytest.approx(1 / 10)
    assert pct_relevant(grades, [], 10, 2) == pytest.approx(2 / 10)
    # 3 results not relevant and 5 missing places.
    assert pct_not_relevant(grades, [], 10, 2) == pytest.approx(8 / 10)
    assert pct_relevant(grades, [], 2, 2) == pytest.approx(1.0)
    assert pct_highly_relevant(grades, [], 2, 2) == pytest.approx(1 / 2)
    assert (pct_highly_relevant([], [], 5, 2), pct_relevant([], [], 5, 2), pct_not_relevant([], [], 5, 2)) == (0, 0, 1)


def test_highly_relevant_means_grade_three_or_more_whatever_the_threshold():
    assert pct_highly_relevant([4, 3, 2], [], 3, 1) == pytest.approx(2 / 3)
    assert pct_highly_relevant([4, 3, 2], [], 10, 1) == pytest.approx(2 / 10)


def test_relevant_and_not_relevant_shares_add_up_to_one():
    rng = random.Random(3)
    for _ in range(200):
        grades = [rng.choice([None, 0, 1, 2, 3]) for _ in range(rng.randint(1, 12))]
        k, threshold = rng.randint(1, 12), rng.randint(1, 3)
        total = pct_relevant(grades, [], k, threshold) + pct_not_relevant(grades, [], k, threshold)
        assert total == pytest.approx(1.0)


def test_judged_is_the_share_of_the_k_places_holding_a_known_grade():
    # Divided by k, as P@k: a place no result holds is not judged (it was 2/4 and 2/2 before).
    assert judged([3, None, 0, None], [], 10, 2) == pytest.approx(0.2)
    assert judged([3, None, 0, None], [], 3, 2) == pytest.approx(2 / 3)
    assert judged([0, 0], [], 10, 2) == pytest.approx(0.2)
    assert judged([0] * 12, [], 10, 2) == 1.0


def test_judged_distinguishes_an_unknown_grade_from_grade_zero():
    assert judged([None], [], 10, 2) == 0.0
    assert judged([0], [], 1, 2) == 1.0


# Edge cases over every metric


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_every_metric_is_at_its_worst_without_results(name):
    # Zero, or for the share not relevant (lower is better) every place: 1.0.
    assert METRICS[name]([], [3, 2, 1], 10, 2) == (1.0 if name == "pct_not_relevant" else 0.0)


@pytest.mark.parametrize("name", [name for name in METRIC_NAMES if not REGISTRY[name].unjudged])
def test_every_metric_but_judged_counts_an_unknown_grade_as_zero(name):
    for grades in ([None, None, None], [3, None, 2, None, 1]):
        as_zero = [0 if g is None else g for g in grades]
        assert METRICS[name](grades, [3, 2, 1], 10, 2) == METRICS[name](as_zero, [3, 2, 1], 10, 2)


# The condensed list is the one that reads below k: its unjudged results are dropped first.
@pytest.mark.parametrize("name", [name for name in METRIC_NAMES if name != "ndcg_judged"])
def test_every_metric_ignores_results_below_k(name):
    grades = [3, 0, None, 2]
    assert METRICS[name](grades + [3, 3, None, 1], [3, 3, 3, 2, 1], 4, 2) == pytest.approx(
        METRICS[name](grades, [3, 3, 3, 2, 1], 4, 2)
    )


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_every_metric_stays_within_the_range_its_record_states(name):
    record = REGISTRY[name]
    upper = {IDEAL: ideal_gain_bound(3, 10), TOP_GRADE: 3.0}.get(record.high, record.high)
    rng = random.Random(5)
    for _ in range(200):
        pool = [rng.randint(0, 3) for _ in range(rng.randint(0, 12))]
        grades = rng.sample(pool, rng.randint(0, len(pool))) + [None] * rng.randint(0, 2)
        rng.shuffle(grades)
        value = METRICS[name](grades, pool, 10, 2)
        assert record.low <= value <= upper + 1e-9


@pytest.mark.parametrize("name", METRIC_NAMES)
@pytest.mark.parametrize("k", [0, -1])
def test_every_metric_rejects_a_k_below_one(name, k):
    with pytest.raises(ValueError, match="k of"):
        METRICS[name]([3], [3], k, 2)


# Registry, names and compute_metrics


def test_registry_holds_the_contract_names_in_display_order():
    assert METRIC_NAMES == (
        "dcg", "ndcg", "precision", "recall", "recall_single_hit", "mrr", "map",
        "mean_relevance", "judged", "pct_highly_relevant", "pct_relevant", "pct_not_relevant",
        "bpref", "ndcg_judged", "err", "rbp", "rbp_residual", "infap", "r_precision",
    )  # fmt: skip
    assert tuple(METRICS) == METRIC_NAMES


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("ndcg@10", MetricSpec("ndcg", 10)),
        ("mrr", MetricSpec("mrr", None)),
        ("map@5", MetricSpec("map", 5)),
        (" DCG@3 ", MetricSpec("dcg", 3)),
        ("recall_single_hit@100", MetricSpec("recall_single_hit", 100)),
    ],
)
def test_parse_metric_reads_name_and_optional_k(text, spec):
    assert parse_metric(text) == spec


def test_metric_spec_label_round_trips_and_falls_back_to_the_runs_k():
    assert parse_metric("ndcg@10").label == "ndcg@10"
    assert parse_metric("mrr").label == "mrr"
    assert parse_metric("mrr").resolve_k(10) == 10
    assert parse_metric("dcg@5").resolve_k(10) == 5


@pytest.mark.parametrize("text", ["ndcg@0", "ndcg@x", "foo@3", "foo", "ndcg@", "ndcg@-1", "", "@3"])
def test_parse_metric_rejects_bad_names_and_ks_in_one_line_listing_the_valid_names(text):
    with pytest.raises(SearchGradeError) as error:
        parse_metric(text)
    message = str(error.value)
    assert "\n" not in message
    assert f'"{text}"' in message
    assert all(name in message for name in METRIC_NAMES)


def test_compute_metrics_returns_every_registered_metric_in_order():
    values = compute_metrics([3, 2, 0, 0, 0], [3, 3, 2, 2, 1], 10, 2)
    assert tuple(values) == METRIC_NAMES
    assert values["dcg"] == pytest.approx(4.26, abs=0.005)
    assert values["precision"] == pytest.approx(0.2)
    assert values["recall"] == pytest.approx(0.5)
    assert values["mrr"] == pytest.approx(1.0)
    assert values["map"] == pytest.approx(0.5)  # (1 + 1) / 4
    assert values["mean_relevance"] == pytest.approx(0.5)  # (3 + 2) / 10


def test_compute_metrics_returns_only_the_names_asked_for():
    assert compute_metrics([2], [2], 10, 2, names=["mrr", "precision"]) == {
        "mrr": 1.0,
        "precision": pytest.approx(0.1),
    }


def test_compute_metrics_rejects_an_unknown_name_and_a_bad_k():
    with pytest.raises(SearchGradeError, match="foo"):
        compute_metrics([2], [2], 10, 2, names=["foo"])
    with pytest.raises(ValueError, match="k of 0"):
        compute_metrics([2], [2], 0, 2)
