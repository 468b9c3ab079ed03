"""Runs written into a real run store through the engine, for the app's tests and the bench.

Rankings are given (no index is built); metrics and CIs come from the pipeline's own functions,
so the stored run is what a real evaluation would store for those rankings.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from searchgrade.core.records import Document, Grade, Query, ScoredDoc, SearchHits
from searchgrade.engine.run.scoring import (
    STANDARD_CUTOFFS,
    per_query_metrics,
    source_found_metrics,
    summarise,
)
from searchgrade.engine.run.strategies import known_strategies
from searchgrade.engine.store import Store
from searchgrade.viewmodels.results import keep_first_view

STRATEGIES = known_strategies()


@dataclass
class RunSpec:
    documents: list[Document]
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    #: strategy -> query_id -> ranked doc ids
    rankings: dict[str, dict[str, list[str]]]
    k: int = 10
    name: str = "synthetic run"
    collection_name: str = "synthetic"
    threshold: int = 2
    skipped: dict[str, str] | None = None
    #: "llm": grades come from the judge (source "llm"), source found@k is stored.
    mode: str = "qrels"
    #: query_id -> doc ids whose judgment failed (stored as grade NULL, source "llm").
    failed: dict[str, set[str]] | None = None
    stats: dict | None = None
    #: More of the run's stored configuration (e.g. {"rerankers": ["tei"]}: its ``ann_tei`` pairs with ``ann``).
    config: dict | None = None


def write_run(store: Store, spec: RunSpec, *, n_bootstrap: int = 1000) -> str:
    depth = max(len(r) for ranking in spec.rankings.values() for r in ranking.values())
    depth = max(depth, spec.k)
    grades = [g for judged in spec.qrels.values() for g in judged.values()]
    llm = spec.mode == "llm"
    source = "llm" if llm else "human"
    # Human labels with judge-vs-human agreement: the judge ran too.
    judged_too = llm or "agreement" in (spec.stats or {})
    config = {"k": spec.k, "mode": spec.mode, "llm": {"model": "fake"} if judged_too else None, **(spec.config or {})}
    run_id = store.create_run(
        name=spec.name, collection_name=spec.collection_name, collection_path=f"/tmp/{spec.collection_name}",
        mode=spec.mode, label_source=source, grade_min=0 if llm else min(grades),
        grade_max=3 if llm else max(grades), threshold=spec.threshold, k=spec.k, depth=depth, config=config,
    )
    query_ids = [q.query_id for q in spec.queries]
    hits = {
        strategy: [SearchHits([ScoredDoc(d, 1.0 / rank, rank) for rank, d in enumerate(ranking[qid], 1)],
                              0.001 * (i + 1))
                   for qid in query_ids]
        for i, (strategy, ranking) in enumerate(spec.rankings.items())
    }
    cutoffs = sorted({c for c in STANDARD_CUTOFFS if c <= depth} | {spec.k, depth})
    failed = spec.failed or {}
    per_query = per_query_metrics(hits, query_ids, spec.qrels, spec.threshold, cutoffs, failed=failed)
    if llm:
        per_query += source_found_metrics(hits, spec.queries, cutoffs)
    summary = summarise(per_query, n_bootstrap, 0)
    model = ("fake", "judge_v1-test") if llm else (None, None)
    stored_grades = [Grade(q, d, g, source, *model, f"reason for {d}" if llm else None)
                     for q, judged in spec.qrels.items() for d, g in judged.items()]
    stored_grades += [Grade(q, d, None, "llm", *model, f"judge failure: invalid reply for {d}")
                      for q, docs in failed.items() for d in sorted(docs)]
    with store.transaction() as con:
        store.write_queries(con, run_id, spec.queries)
        for strategy, strategy_hits in hits.items():
            store.write_results(con, run_id, strategy, query_ids, strategy_hits)
        store.write_grades(con, run_id, stored_grades)
        store.write_documents(con, run_id, spec.documents)
        store.write_metric_values(con, run_id, per_query)
        store.write_metric_summary(con, run_id, summary)
    if spec.skipped:
        store.update_run(run_id, skipped=spec.skipped)
    store.update_run(run_id, stats={"queries": len(query_ids), **(spec.stats or {})})
    store.finish_run(run_id, "complete")
    keep_first_view(store, run_id)  # as the pipeline does when a run completes
    return run_id


def tiny_spec(**overrides) -> RunSpec:
    """Two queries, three strategies, k = 3: small enough to compute every number by hand.

    DCG@3 per query (linear gain): ann 1.8928, 3.5; fulltext 3.6309, 2.8928; ann_rerank 3.0, 4.2619.
    """
    documents = [Document(f"d{i}", f"Doc {i} title", f"Text of document {i}.") for i in range(1, 7)]
    queries = [Query("q1", "what is alpha", "natural", "d1"), Query("q2", "beta", "keyword", "d2")]
    qrels = {"q1": {"d1": 3, "d2": 1, "d3": 0}, "q2": {"d2": 3, "d4": 2, "d5": 2}}
    rankings = {
        "ann": {"q1": ["d3", "d1", "d5"], "q2": ["d4", "d6", "d2"]},
        "fulltext": {"q1": ["d1", "d2", "d6"], "q2": ["d6", "d2", "d4"]},
        "ann_rerank": {"q1": ["d1", "d3", "d5"], "q2": ["d2", "d4", "d6"]},
    }
    spec = RunSpec(documents, queries, qrels, rankings, k=3, name="tiny run", collection_name="tiny")
    for key, value in overrides.items():
        setattr(spec, key, value)
    return spec


def llm_spec(**overrides) -> RunSpec:
    """The tiny run as an LLM run: judge grades, two failed judgments per query, k = 3.

    ann      q1 [d3 0, d1 3, d5 failed]   q2 [d4 2, d6 failed, d2 3]
    fulltext q1 [d5 failed, d1 3, d2 1]   q2 [d6 failed, d2 3, d4 2]
    Sources: q1 d1, q2 d2.
    """
    spec = tiny_spec(name="llm run", mode="llm")
    spec.qrels = {"q1": {"d1": 3, "d2": 1, "d3": 0}, "q2": {"d2": 3, "d4": 2}}
    spec.failed = {"q1": {"d5"}, "q2": {"d6"}}
    spec.rankings = {
        "ann": {"q1": ["d3", "d1", "d5"], "q2": ["d4", "d6", "d2"]},
        "fulltext": {"q1": ["d5", "d1", "d2"], "q2": ["d6", "d2", "d4"]},
    }
    for key, value in overrides.items():
        setattr(spec, key, value)
    return spec


def random_spec(n_queries: int, *, n_docs: int = 5000, k: int = 10, seed: int = 0,
                strategies: Sequence[str] = STRATEGIES, name: str = "random run") -> RunSpec:
    """n_queries queries with 0-3 qrels; each strategy finds relevant documents at its own rate."""
    rng = random.Random(seed)
    documents = [Document(f"d{i}", f"Title {i}", f"Body of document {i}.") for i in range(n_docs)]
    queries = [Query(f"q{i}", f"query number {i}", ("natural", "keyword")[i % 2], f"d{i % n_docs}")
               for i in range(n_queries)]
    qrels = {q.query_id: {f"d{rng.randrange(n_docs)}": rng.randint(0, 3) for _ in range(8)} for q in queries}
    skill = {s: 0.2 + 0.1 * i for i, s in enumerate(strategies)}
    rankings: dict[str, dict[str, list[str]]] = {}
    for strategy in strategies:
        ranking = {}
        for q in queries:
            judged = list(qrels[q.query_id])
            docs: list[str] = []
            while len(docs) < k:
                d = rng.choice(judged) if rng.random() < skill[strategy] else f"d{rng.randrange(n_docs)}"
                if d not in docs:
                    docs.append(d)
            ranking[q.query_id] = docs
        rankings[strategy] = ranking
    return RunSpec(documents, queries, qrels, rankings, k=k, name=name, collection_name="random")
