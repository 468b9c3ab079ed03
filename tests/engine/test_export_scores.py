"""The exported score: strictly decreasing within a query, also as trec_eval reads it (32-bit floats),
and the stored score wherever that already ranks the results."""

from __future__ import annotations

import random

import numpy as np
import pytest

from searchgrade.engine.export import TIE_GAP, ranking_scores


def test_scores_already_apart_are_kept_and_ties_are_lowered_by_a_millionth():
    assert ranking_scores([3.0, 2.0, 1.0]) == [3.0, 2.0, 1.0]
    assert ranking_scores([0.5, 0.5, 0.4, 0.45]) == pytest.approx([0.5, 0.5 * (1 - TIE_GAP), 0.4, 0.4 * (1 - TIE_GAP)])
    assert ranking_scores([]) == []
    assert ranking_scores([None, float("nan"), 0.0]) == pytest.approx([0.0, -1e-12, -2e-12])


def test_every_export_is_strictly_decreasing_as_a_32_bit_float_reads_it():
    rng = random.Random(3)
    for _ in range(500):
        # RRF-like scores with ties and near ties, BM25-like large ones, distances rising down a list.
        base = rng.choice([1 / 61, 12.5, 0.0, -3.0])
        scores = [base - rng.choice([0, 0, 1e-9, 1e-3]) * i for i in range(rng.randint(1, 30))]
        if rng.random() < 0.2:
            scores.reverse()
        out = np.array(ranking_scores(scores), dtype=np.float32)
        assert (np.diff(out) < 0).all(), scores
