"""Click-derived labels rank systems as the qrels do: a simulated click log with known truth."""

from __future__ import annotations

import itertools

import pytest

from tests.engine.clicks.click_study import agreement, build_study, true_means

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return build_study(tmp_path_factory.mktemp("cranfield_bm25"))


def test_the_study_has_ten_or_more_systems_apart_from_each_other(study):
    means = sorted(true_means(study).values())
    assert len(means) >= 10
    assert min(b - a for a, b in itertools.pairwise(means)) >= 0.15


def test_click_labels_rank_the_systems_as_the_qrels_do(study):
    taus = agreement(study, seed=0)
    print(f"Kendall tau vs qrels: {', '.join(f'{m} {t:.3f}' for m, t in taus.items())}")
    assert taus["pbm"] >= 0.8  # the goal is 0.9 (bench/RESULTS.md has the figures over seeds)
    assert taus["coec"] >= 0.8
    # Raw click-through ignores position bias: the position-based model corrects it and ranks better.
    assert taus["pbm"] > taus["ctr"]
