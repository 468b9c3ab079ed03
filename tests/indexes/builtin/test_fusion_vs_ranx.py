"""Our fused lists equal ranx.fuse's for every method ranx also has (RRF, CombSUM, CombMNZ and the
weighted sum, weighted MNZ over min-max, z-score and sum normalisation), on lists cut to a depth
per list. ranx's numba compile takes a few seconds once per session."""

from __future__ import annotations

import random

import pytest

from searchgrade.core.records import ScoredDoc
from searchgrade.indexes.builtin.fusion import Fusion, fuse, parse_fusion

ranx = pytest.importorskip("ranx", reason="ranx is the reference: pip install ranx")

QUERIES = 12


def lists_for(seed: int) -> dict[str, list[list[ScoredDoc]]]:
    """Per query, two ranked lists over overlapping documents, distinct scores (no ties inside a list)."""
    rng = random.Random(seed)
    out = {}
    for q in range(QUERIES):
        docs = [f"d{i:02d}" for i in range(30)]
        pair = []
        for scale in (1.0, 25.0):  # a cosine-like and a BM25-like scale
            chosen = rng.sample(docs, rng.randint(3, 20))
            scores = sorted(rng.sample(range(1, 10_000), len(chosen)), reverse=True)
            pair.append([ScoredDoc(d, scale * s / 10_000, r) for r, (d, s) in enumerate(zip(chosen, scores), 1)])
        out[f"q{q}"] = pair
    return out


def as_ranx(lists: dict[str, list[list[ScoredDoc]]], which: int, depth: int):
    return ranx.Run({q: {d.doc_id: d.score for d in pair[which][:depth]} for q, pair in lists.items()})


# (our fusion, ranx norm, ranx method, ranx params)
CASES = [
    ("rrf", None, "rrf", {"k": 60}),
    ("rrf(k=10)", None, "rrf", {"k": 10}),
    ("combsum(norm=minmax)", "min-max", "sum", {}),
    ("combsum(norm=zscore)", "zmuv", "sum", {}),
    ("combsum(norm=sum)", "sum", "sum", {}),
    ("combmnz(norm=minmax)", "min-max", "mnz", {}),
    ("combmnz(norm=zscore)", "zmuv", "mnz", {}),
    ("combmnz(norm=sum)", "sum", "mnz", {}),
    ("convex(w=0.3,norm=minmax)", "min-max", "wsum", {"weights": [0.3, 0.7]}),
    ("convex(w=0.8,norm=zscore)", "zmuv", "wsum", {"weights": [0.8, 0.2]}),
    ("convex(w=0.5,norm=sum)", "sum", "wsum", {"weights": [0.5, 0.5]}),
    ("combsum(norm=minmax,w=0.2:0.9)", "min-max", "wsum", {"weights": [0.2, 0.9]}),
    ("combmnz(norm=minmax,w=0.4:1.5)", "min-max", "wmnz", {"weights": [0.4, 1.5]}),
]


@pytest.mark.parametrize(("text", "norm", "method", "params"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("depth", [100, 7])
def test_fused_lists_equal_ranx_fuse(text, norm, method, params, depth):
    lists = lists_for(seed=len(text) + depth)
    fusion = parse_fusion(text, depth=depth)
    theirs = ranx.fuse([as_ranx(lists, 0, depth), as_ranx(lists, 1, depth)], norm=norm, method=method,
                       params=dict(params)).to_dict()
    for q, pair in lists.items():
        ours = fuse(pair, fusion)
        assert {d.doc_id: d.score for d in ours} == pytest.approx(theirs[q], rel=1e-9, abs=1e-12)
        # Same order where the scores differ; equal scores by doc id (ours), whatever ranx's order.
        expected = sorted(theirs[q], key=lambda d: (-round(theirs[q][d], 12), d))
        assert [d.doc_id for d in ours] == expected
        assert [d.rank for d in ours] == list(range(1, len(ours) + 1))


def test_a_depth_per_list_cuts_each_list_on_its_own():
    lists = lists_for(seed=3)
    fusion = parse_fusion("combsum(norm=minmax,depth=4:9)")
    theirs = ranx.fuse([as_ranx(lists, 0, 4), as_ranx(lists, 1, 9)], norm="min-max", method="sum").to_dict()
    for q, pair in lists.items():
        assert {d.doc_id: d.score for d in fuse(pair, fusion)} == pytest.approx(theirs[q], rel=1e-9, abs=1e-12)


def test_weighted_rrf_weights_each_lists_reciprocal_ranks():
    a = [ScoredDoc("x", 9.0, 1), ScoredDoc("y", 8.0, 2)]
    b = [ScoredDoc("y", 0.9, 1), ScoredDoc("z", 0.8, 2)]
    fused = fuse([a, b], parse_fusion("wrrf(w=0.75,k=0)"))
    # y: 0.75/2 + 0.25/1 = 0.625; x: 0.75/1 = 0.75; z: 0.25/2 = 0.125
    assert [(d.doc_id, d.score) for d in fused] == [("x", pytest.approx(0.75)), ("y", pytest.approx(0.625)),
                                                    ("z", pytest.approx(0.125))]


def test_default_fusion_is_the_rrf_hybrid_always_used():
    assert Fusion() == parse_fusion("rrf") and Fusion().text() == "rrf(k=60,depth=100)"
