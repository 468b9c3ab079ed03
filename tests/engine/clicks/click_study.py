"""The click study: Cranfield's graded qrels as the truth, BM25 strategies and degraded versions of
them as the systems, a simulated click log over Zipf traffic, and each click model's labels
ranking the systems against the qrels (Kendall's tau). Shared by tests/engine/clicks and
bench/bench_clicks.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from searchgrade.engine.clicks.grading import click_grades
from searchgrade.engine.clicks.models import CLICK_MODELS
from searchgrade.engine.clicks.simulation import ranking_agreement, simulate_clicks, system_means
from searchgrade.engine.collections import load_collection
from searchgrade.indexes.builtin.fulltext import FulltextSearcher, build_index
from tests.conftest import CRANFIELD

#: The systems the three deployed ones serve: production and two A/B buckets.
SERVED = {"production": ("bm25 k1=0.9 b=0.4", 0.6), "bucket a": ("bm25", 0.2), "bucket b": ("bm25 k1=0.5 b=0.3", 0.2)}


@dataclass
class Study:
    systems: dict[str, dict[str, list[str]]]
    truth: dict[str, dict[str, int]]
    queries: list[str]


def build_study(index_dir: Path) -> Study:
    """Eleven systems on Cranfield: three BM25 configurations (real strategies) and eight degraded
    versions (reversed, random documents mixed in at 20-80%, a flat BM25 with random documents),
    whose true mean DCG@10 differ by at least 0.15."""
    collection = load_collection(CRANFIELD)
    queries = [q for q in collection.queries if q.query_id in collection.qrels]
    docs = [d.doc_id for d in collection.documents]
    index = build_index(index_dir, docs, [d.content for d in collection.documents])

    def bm25(k1: float, b: float) -> dict[str, list[str]]:
        hits = FulltextSearcher(index, k1, b).search([q.text for q in queries], 10)
        return {q.query_id: [d.doc_id for d in h.docs] for q, h in zip(queries, hits, strict=True)}

    def mixed(system: dict[str, list[str]], share: float, seed: int) -> dict[str, list[str]]:
        rng = np.random.default_rng(seed)
        return {q: [d if rng.uniform() > share else docs[rng.integers(len(docs))] for d in ranked]
                for q, ranked in system.items()}

    best, flat = bm25(1.5, 0.75), bm25(0.05, 0.0)
    systems = {"bm25": best, "bm25 k1=0.9 b=0.4": bm25(0.9, 0.4), "bm25 k1=0.5 b=0.3": bm25(0.5, 0.3),
               "bm25 reversed": {q: r[::-1] for q, r in best.items()}}
    for share in (0.2, 0.35, 0.5, 0.8):
        systems[f"bm25 {share:.0%} random"] = mixed(best, share, int(share * 100))
    for share in (0.2, 0.5, 0.65):
        systems[f"flat bm25 {share:.0%} random"] = mixed(flat, share, int(share * 100) + 1)
    truth = {q: dict(judged) for q, judged in collection.qrels.items()}
    return Study(systems, truth, [q.query_id for q in queries])


def searches_per_query(study: Study, seed: int) -> dict[str, int]:
    """Zipf traffic: the r-th most searched query gets 20,000 / r searches, at least 30."""
    order = np.random.default_rng(seed).permutation(len(study.queries))
    return {study.queries[i]: int(max(30, 20000 / rank)) for rank, i in enumerate(order, start=1)}


def agreement(study: Study, seed: int, *, min_impressions: int = 10, swap_rate: float = 0.3,
              shuffle_rate: float = 0.0) -> dict[str, float]:
    """Kendall's tau of each click model's system ranking against the qrels'."""
    served = {name: study.systems[system] for name, (system, _) in SERVED.items()}
    shares = {name: share for name, (_, share) in SERVED.items()}
    sim = simulate_clicks(served, shares, searches_per_query(study, seed), study.truth, max_grade=4,
                          swap_rate=swap_rate, shuffle_rate=shuffle_rate, seed=seed)
    out = {}
    for model in CLICK_MODELS:
        found = click_grades(sim.counts, model, min_examinations=min_impressions)
        labels: dict[str, dict[str, int]] = {}
        for (query, doc), grade, ok in zip(sim.pairs, found.grades, found.judged, strict=True):
            if ok:
                labels.setdefault(query, {})[doc] = int(grade)
        out[model] = ranking_agreement(study.systems, study.truth, labels, study.queries)
    return out


def true_means(study: Study) -> dict[str, float]:
    return system_means(study.systems, study.truth, study.queries)
