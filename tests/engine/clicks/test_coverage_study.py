"""The coverage study (tests/engine/clicks/scifact_study.py): 13 systems on SciFact near and far from
a logged BM25, a click log simulated with known parameters, and what click judgments say against the
qrels. bench/bench_click_coverage.py runs the same over seeds; bench/RESULTS.md has the figures."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.clicks import scifact_study as study_module

pytestmark = pytest.mark.slow

SEED = 0


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return study_module.build_systems(tmp_path_factory.mktemp("scifact_systems"))


@pytest.fixture(scope="module")
def one_policy(study):
    pairs, grades = study_module.simulate(study, SEED)
    return study_module.click_labels(pairs, grades), grades


def test_the_study_has_ten_or_more_variants_dense_and_hybrid_among_them(study):
    assert len(study.systems) >= 10
    assert "ann" in study.systems and sum(name.startswith("hybrid") for name in study.systems) == 4
    # Under the qrels the logged system is not the best: the comparison the clicks must not invert.
    means = {n: study_module.per_query(study, n, study.truth)[0].mean() for n in study.systems}
    assert max(means, key=means.get) != study_module.LOGGED


def test_one_logging_policy_gives_no_significant_verdict_the_qrels_reverse(study, one_policy):
    labels, grades = one_policy
    # One ranker, nothing shown at two positions: the position bias is the stated default 1/p
    # (the simulated users examine 1/p**0.8), and the cut-points come from the clicks.
    assert grades.position_bias.source == "default" and grades.thresholds.source == "data"
    coverage = {n: study_module.per_query(study, n, labels)[1].mean() for n in study.systems}
    assert coverage[study_module.LOGGED] > 0.9 and coverage["ann"] < 0.5  # near and far from the log
    every_pair = study_module.verdicts(study, labels)
    page = study_module.verdicts(study, labels, study_module.best_against_others(study, labels))
    print(f"every pair: {every_pair.count('significant')} significant, {every_pair.count('condensed')} condensed, "
          f"{every_pair.count('withheld')} withheld; the page's family: {page.count('significant')} significant")
    assert every_pair.reversed == [] and page.reversed == []
    # Not by saying nothing: verdicts are made, on condensed lists too, and the far ones withheld.
    assert every_pair.count("significant") >= 10 and every_pair.count("condensed") >= 10
    withheld = {frozenset(p) for p, v in zip(every_pair.pairs, every_pair.verdicts, strict=True) if v.withheld}
    assert frozenset(("ann", study_module.LOGGED)) in withheld


def test_a_pair_clicked_at_the_base_rate_is_graded_zero(study, one_policy):
    labels, grades = one_policy
    relevant = [g for q, judged in labels.items() for d, g in judged.items() if study.truth.get(q, {}).get(d, 0) > 0]
    not_relevant = [g for q, judged in labels.items() for d, g in judged.items()
                    if study.truth.get(q, {}).get(d, 0) == 0]
    assert np.mean(np.array(not_relevant) == 0) > 0.98  # the base rate is 0.05 there
    assert np.mean(np.array(relevant) >= 2) > 0.95
    assert grades.thresholds.base_rate < 0.1 < grades.thresholds.cutpoints[0]


def test_filling_the_holes_with_a_judge_that_knows_the_qrels_ranks_the_systems_as_the_qrels_do(study, one_policy):
    labels, _ = one_policy
    clicks_alone = study_module.kendall(study, labels)
    filled = study_module.kendall(study, study_module.filled(labels, study))
    print(f"Kendall's tau against the qrels: clicks alone {clicks_alone:.3f}, holes filled {filled:.3f}")
    assert filled >= 0.9 > clicks_alone


def test_several_logging_policies_give_the_position_bias_within_ten_percent(study):
    _, grades = study_module.simulate(study, SEED, study_module.POLICIES)
    assert grades.position_bias.source == "interventions" and grades.position_bias.pairs > 500
    error = study_module.theta_error(grades)
    print("relative error of the examination at positions 1-10:", np.round(error, 3).tolist())
    assert np.abs(error).max() <= 0.10
