"""The coverage study: SciFact's qrels as the truth, 13 systems near and far from a logged BM25
(eight BM25 settings, dense ANN with the packaged all-MiniLM-L6-v2 over the shipped vectors, four
hybrids), a click log simulated by the position-based model under one or several logging policies,
and what click judgments say about the systems against what the qrels say. Shared by
tests/engine/clicks/test_coverage_study.py and bench/bench_click_coverage.py.

Every verdict goes through the app's own rule (engine/statistics/holes.py) and click grades through
engine/clicks/grading.py; only the searching and the clicking are simulated here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from searchgrade.engine.clicks.grading import ClickGrades, click_grades
from searchgrade.engine.clicks.simulation import simulate_clicks
from searchgrade.engine.metrics.dcg import dcg
from searchgrade.engine.statistics.holes import HoleVerdict, Sides, condensed_lists, withheld_reason
from searchgrade.engine.statistics.pairing import compare_with_holes
from tests.conftest import DEMO

#: The logged system (what users see under one logging policy): BM25 with k1 1.5, b 0.75.
LOGGED = "bm25 k1=1.5 b=0.75"
#: Several logging policies: four systems serving a quarter of the searches each.
POLICIES = ("bm25 k1=1.5 b=0.75", "bm25 k1=0.9 b=0.4", "hybrid rrf", "ann")
#: The simulated users: examination 1 / p**ETA (not the default 1 / p the app assumes without
#: interventions), attractiveness 0.05 for a non-relevant result and 0.6 for a relevant one.
ETA = 0.8
CEILING = 0.6
SESSIONS = 200_000
K = 10


@dataclass
class Study:
    systems: dict[str, dict[str, list[str]]]
    truth: dict[str, dict[str, int]]
    queries: list[str]


def build_systems(folder: Path) -> Study:
    """The 13 systems' top 10 on SciFact's 300 judged queries."""
    from searchgrade.core.records import ScoredDoc
    from searchgrade.engine.collections import load_collection
    from searchgrade.indexes.builtin.fulltext import FulltextSearcher, build_index
    from searchgrade.indexes.builtin.fusion import Fusion, fuse
    from searchgrade.indexes.embeddings.encoder import EmbeddingCache, encode_cached
    from searchgrade.indexes.settings import DEFAULT_EMBEDDING_MODEL

    collection = load_collection(DEMO)
    queries = [q for q in collection.queries if q.query_id in collection.qrels]
    docs = [d.doc_id for d in collection.documents]
    index = build_index(folder / "bm25", docs, [d.content for d in collection.documents])
    cache = folder / "embeddings"
    EmbeddingCache(cache).import_shard(DEMO / "embeddings" / "sentence-transformers_all-MiniLM-L6-v2.npz")
    doc_vectors, _ = encode_cached(DEFAULT_EMBEDDING_MODEL, [d.content for d in collection.documents], cache)
    query_vectors, _ = encode_cached(DEFAULT_EMBEDDING_MODEL, [q.text for q in queries], cache)
    depth = 100
    lists: dict[str, dict[str, list[ScoredDoc]]] = {}
    for k1, b in ((1.5, 0.75), (0.9, 0.4), (1.2, 0.75), (2.0, 0.75), (0.5, 0.3), (1.5, 0.3), (1.5, 1.0), (3.0, 0.9)):
        searcher = FulltextSearcher(index, k1, b)
        lists[f"bm25 k1={k1} b={b}"] = {q.query_id: searcher.search_one(q.text, depth) for q in queries}
    similarity = query_vectors @ doc_vectors.T
    lists["ann"] = {}
    for i, q in enumerate(queries):
        top = np.argsort(-similarity[i], kind="stable")[:depth]
        lists["ann"][q.query_id] = [ScoredDoc(docs[j], float(similarity[i, j]), r) for r, j in enumerate(top, 1)]
    bm25 = lists[LOGGED]
    for name, fusion in (("hybrid rrf", Fusion()), ("hybrid wrrf 0.3", Fusion("wrrf", weights=(0.3,))),
                         ("hybrid convex 0.5", Fusion("convex", weights=(0.5,))),
                         ("hybrid combmnz", Fusion("combmnz", norm="zscore"))):
        lists[name] = {q: fuse([bm25[q], lists["ann"][q]], fusion) for q in bm25}
    systems = {name: {q: [d.doc_id for d in ranked[:K]] for q, ranked in by_query.items()}
               for name, by_query in lists.items()}
    truth = {q: dict(judged) for q, judged in collection.qrels.items()}
    return Study(systems, truth, [q.query_id for q in queries])


def searches_per_query(study: Study, seed: int, sessions: int = SESSIONS) -> dict[str, int]:
    """Zipf traffic over the queries (the r-th most searched gets a share 1/r), at least 30 each."""
    order = np.random.default_rng(seed).permutation(len(study.queries))
    harmonic = sum(1 / r for r in range(1, len(study.queries) + 1))
    return {study.queries[i]: max(30, round(sessions / (r * harmonic))) for r, i in enumerate(order, start=1)}


def simulate(study: Study, seed: int, policies: Sequence[str] = (LOGGED,), swap_rate: float = 0.0,
             sessions: int = SESSIONS) -> tuple[list[tuple[str, str]], ClickGrades]:
    """A click log served by ``policies`` in equal shares, graded by the position-based model."""
    served = {name: study.systems[name] for name in policies}
    sim = simulate_clicks(served, dict.fromkeys(policies, 1.0), searches_per_query(study, seed, sessions),
                          study.truth, max_grade=1, eta=ETA, swap_rate=swap_rate, ceiling=CEILING, seed=seed)
    return sim.pairs, click_grades(sim.counts, "pbm")


def click_labels(pairs: Sequence[tuple[str, str]], grades: ClickGrades) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (query, doc), grade, judged in zip(pairs, grades.grades, grades.judged, strict=True):
        if judged:
            out.setdefault(query, {})[doc] = int(grade)
    return out


def filled(labels: Mapping[str, Mapping[str, int]], study: Study) -> dict[str, dict[str, int]]:
    """The click labels with every unjudged retrieved pair graded by a judge that knows the qrels
    (3 for a relevant document, 0 otherwise): what --judge-unjudged does with a faithful judge."""
    out = {q: dict(judged) for q, judged in labels.items()}
    for rankings in study.systems.values():
        for query, docs in rankings.items():
            for doc in docs:
                out.setdefault(query, {}).setdefault(doc, 3 if study.truth.get(query, {}).get(doc, 0) > 0 else 0)
    return out


def _grades(study: Study, system: str, labels: Mapping[str, Mapping[str, int]], query: str) -> list[int | None]:
    return [labels.get(query, {}).get(d) for d in study.systems[system][query]]


def per_query(study: Study, system: str, labels: Mapping[str, Mapping[str, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(DCG@10 with holes as 0, judged@10) per query."""
    values, judged = [], []
    for q in study.queries:
        grades = _grades(study, system, labels, q)
        values.append(dcg(grades, [], K, 1))
        judged.append(sum(g is not None for g in grades) / K)
    return np.array(values), np.array(judged)


def kendall(study: Study, labels: Mapping[str, Mapping[str, int]]) -> float:
    """Kendall's tau between the systems ranked by mean DCG@10 with ``labels`` and with the qrels."""
    from scipy.stats import kendalltau

    names = sorted(study.systems)
    truth = [per_query(study, n, study.truth)[0].mean() for n in names]
    derived = [per_query(study, n, labels)[0].mean() for n in names]
    return float(kendalltau(truth, derived).statistic)


@dataclass
class Verdicts:
    pairs: list[tuple[str, str]]
    verdicts: list[HoleVerdict]
    #: Significant verdicts whose sign the qrels' mean difference reverses: (a, b, click diff, qrels diff).
    reversed: list[tuple[str, str, float, float]] = field(default_factory=list)

    def count(self, what: str) -> int:
        return sum(1 for v in self.verdicts if (what == "significant" and v.significant) or
                   (what == "condensed" and v.condensed) or (what == "withheld" and v.withheld))


def verdicts(study: Study, labels: Mapping[str, Mapping[str, int]],
             pairs: Sequence[tuple[str, str]] | None = None) -> Verdicts:
    """Every pair of systems (default) compared on DCG@10 with ``labels`` by the app's rule, as one
    family; the significant ones the qrels reverse."""
    names = sorted(study.systems)
    pairs = list(pairs if pairs is not None else itertools.combinations(names, 2))
    figures = {n: per_query(study, n, labels) for n in names}
    truth = {n: per_query(study, n, study.truth)[0].mean() for n in names}

    def condensed(a: str, b: str) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
        def compute() -> tuple[np.ndarray, np.ndarray]:
            va, vb = [], []
            for q in study.queries:
                ca, cb = condensed_lists(_grades(study, a, labels, q), _grades(study, b, labels, q), K)
                if ca:
                    va.append(dcg(ca, [], K, 1))
                    vb.append(dcg(cb, [], K, 1))
            return np.array(va), np.array(vb)
        return compute

    sides = [Sides(figures[a][0], figures[b][0], figures[a][1], figures[b][1], condensed(a, b)) for a, b in pairs]
    reasons = [lambda ja, jb, a=a, b=b: withheld_reason(a, b, ja, jb, K) for a, b in pairs]
    found = compare_with_holes(sides, reasons)
    out = Verdicts(pairs, found)
    for (a, b), v in zip(pairs, found, strict=True):
        if v.significant and v.difference is not None:
            real = truth[a] - truth[b]
            if np.sign(real) != np.sign(v.difference.diff):
                out.reversed.append((a, b, v.difference.diff, real))
    return out


def best_against_others(study: Study, labels: Mapping[str, Mapping[str, int]]) -> list[tuple[str, str]]:
    """The Results page's family: the system with the highest mean DCG@10 against each other one."""
    means = {n: per_query(study, n, labels)[0].mean() for n in study.systems}
    best = max(sorted(means), key=means.get)
    return [(best, other) for other in sorted(means) if other != best]


def theta_error(grades: ClickGrades) -> np.ndarray:
    """The relative error of the estimated examination at positions 1..10 against the simulated one."""
    assert grades.position_bias is not None
    true = np.arange(1, K + 1, dtype=float) ** -ETA
    return grades.position_bias.theta[1:K + 1] / true - 1
