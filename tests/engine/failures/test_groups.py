"""Failed queries grouped by meaning (engine/failures/groups.py): k-means over their vectors,
named by their telling terms, seeded."""

from __future__ import annotations

import numpy as np

from searchgrade.engine.failures.groups import group_failures, query_map, telling_terms, text_vectors


def _topic(rng: np.random.Generator, centre: np.ndarray, n: int) -> np.ndarray:
    return centre + 0.15 * rng.normal(size=(n, len(centre)))


def test_two_topics_become_two_groups_named_by_their_words():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=32), rng.normal(size=32)
    vectors = np.vstack([_topic(rng, a, 9), _topic(rng, b, 7)])
    texts = [f"dosage of drug {i} in mg" for i in range(9)] + [f"solar panel output {i}" for i in range(7)]
    every = [*texts, "weather today", "football scores", "dosage chart"]
    groups = group_failures(vectors, texts, every, seed=0)
    assert sorted(sorted(g.members) for g in groups) == [list(range(9)), list(range(9, 16))]
    assert groups[0].members == list(range(9))  # largest first
    assert set(groups[0].terms) <= {"drug", "dosage"} and "drug" in groups[0].terms
    assert set(groups[1].terms) == {"solar", "panel", "output"}
    again = group_failures(vectors, texts, every, seed=0)
    assert [g.members for g in again] == [g.members for g in groups]


def test_too_few_or_identical_queries_are_not_split():
    assert group_failures(np.eye(3), ["a b", "c d", "e f"], ["a b"]) == []
    same = group_failures(np.ones((5, 4)), ["same words"] * 5, ["same words"])
    assert [g.members for g in same] == [[0, 1, 2, 3, 4]]


def test_a_word_must_be_shared_to_name_a_group():
    assert telling_terms(["alpha beta", "alpha gamma", "alpha delta"], ["alpha beta", "zeta"]) == ["alpha"]


def test_the_map_and_the_word_vectors_are_reproducible():
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(40, 12))
    first, how = query_map(vectors, seed=0)
    second, _ = query_map(vectors, seed=0)
    assert how == "t-SNE" and first.shape == (40, 2) and np.array_equal(first, second)
    words = text_vectors(["solar panel", "solar power", "drug dose", "drug mg"], seed=0)
    assert words.shape[0] == 4 and np.allclose(np.linalg.norm(words, axis=1), 1.0)
