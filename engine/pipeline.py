"""The evaluation pipeline: queries -> search -> grades -> metrics, stored as one run.

A run is created as 'running' before any work and ends 'complete' only after its last write; a
failure ends it 'failed' and Ctrl-C 'interrupted', each with what it completed (stage timings and
the error). Results, grades and metrics of a run land in one transaction, so a run that did not
finish never holds half of them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.types import STRATEGIES, Collection, Grade, Query, SearchGradeError, SearchHits

Progress = Callable[[str, int, int], None]

#: Cut-offs stored for every run (those up to its depth), besides the run's own k.
STANDARD_CUTOFFS = (1, 3, 5, 10, 20, 50, 100)


@dataclass(frozen=True)
class RunConfig:
    """What a run does. Stored with the run (as JSON) so it can be repeated and compared."""

    name: str | None = None
    mode: str = "qrels"
    k: int = 10
    #: Results kept per query and strategy; metrics at any k up to it come from stored results.
    depth: int | None = None
    threshold: int | None = None
    strategies: tuple[str, ...] = STRATEGIES
    #: Evaluate a seeded sample of this many queries (None: all queries with judgments).
    max_queries: int | None = None
    seed: int = 0
    n_bootstrap: int = 10_000
    index: Any = None  # indexes.settings.IndexSettings; None means the defaults

    @property
    def retrieval_depth(self) -> int:
        return self.depth if self.depth is not None else self.k

    def validate(self) -> None:
        if self.mode != "qrels":
            raise SearchGradeError(
                f"mode {self.mode!r} is not available in this pipeline; use --qrels with a collection "
                "that has human judgments"
            )
        if self.k < 1:
            raise SearchGradeError(f"--k of {self.k} must be at least 1")
        if self.retrieval_depth < self.k:
            raise SearchGradeError(
                f"--depth of {self.retrieval_depth} is smaller than --k of {self.k}; set --depth >= --k"
            )
        unknown = [s for s in self.strategies if s not in STRATEGIES]
        if unknown or not self.strategies:
            raise SearchGradeError(
                f"unknown strategies {unknown or '(none given)'}; choose from {', '.join(STRATEGIES)}"
            )
        if self.max_queries is not None and self.max_queries < 1:
            raise SearchGradeError(f"--max-queries of {self.max_queries} must be at least 1")
        if self.threshold is not None and self.threshold < 1:
            raise SearchGradeError(
                f"--threshold of {self.threshold} must be at least 1 (a grade of 0 is never relevant)"
            )

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["strategies"] = list(self.strategies)
        d["index"] = asdict(self.index) if self.index is not None else None
        return d


@dataclass
class RunOutcome:
    run_id: str
    status: str
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def select_qrels_queries(collection: Collection, max_queries: int | None, seed: int) -> list[Query]:
    """The collection's queries that have at least one judgment, optionally a seeded sample."""
    qrels = collection.qrels or {}
    queries = [q for q in collection.queries if qrels.get(q.query_id)]
    if not queries:
        raise SearchGradeError(
            f"collection {collection.path} has no query with a judgment in its qrels; "
            "check that qrels query ids match queries.jsonl"
        )
    if max_queries is not None and max_queries < len(queries):
        queries = sorted(random.Random(seed).sample(queries, max_queries), key=lambda q: q.query_id)
    return queries


def run_evaluation(
    collection: Collection,
    config: RunConfig,
    store: Any,
    data_dir: str | Path,
    *,
    progress: Progress | None = None,
    on_run_created: Callable[[str], None] | None = None,
) -> RunOutcome:
    """Evaluate every strategy on a collection and store the run.

    Args:
        collection: The corpus, with queries and qrels for mode "qrels".
        config: What to run.
        store: The run store (engine.store.Store).
        data_dir: Where index artifacts and caches live.
        progress: Called as progress(stage, done, total) while work advances.
        on_run_created: Called with the run id as soon as the run row exists.

    Returns:
        The run id and its final status. Raises on failure after marking the run failed.
    """
    from engine.collections import default_threshold, grade_scale
    from indexes.settings import IndexSettings

    config.validate()
    if config.index is None:
        config = replace(config, index=IndexSettings())
    if not collection.has_qrels:
        raise SearchGradeError(
            f"collection {collection.path} has no qrels (human judgments); add qrels.tsv "
            "(query-id, corpus-id, score) or use the LLM mode"
        )
    queries = select_qrels_queries(collection, config.max_queries, config.seed)
    qrels = {q.query_id: collection.qrels[q.query_id] for q in queries}
    grade_min, grade_max = grade_scale(qrels)
    threshold = config.threshold if config.threshold is not None else default_threshold(grade_max)
    if threshold > grade_max:
        raise SearchGradeError(
            f"--threshold of {threshold} is above the highest grade in the qrels ({grade_max}); "
            "no document could count as relevant: lower it"
        )
    name = config.name or f"{collection.name} {time.strftime('%Y-%m-%d %H:%M')}"
    run_id = store.create_run(
        name=name,
        collection_name=collection.name,
        collection_path=str(collection.path),
        mode=config.mode,
        label_source="human",
        grade_min=grade_min,
        grade_max=grade_max,
        threshold=threshold,
        k=config.k,
        depth=config.retrieval_depth,
        config=config.to_json(),
        notes=collection.notes,
    )
    if on_run_created is not None:
        on_run_created(run_id)
    timings: dict[str, float] = {}
    try:
        outcome = _run_stages(collection, config, store, Path(data_dir), run_id, queries, qrels,
                              threshold, timings, progress)
    except KeyboardInterrupt:
        store.update_run(run_id, timings=timings)
        store.finish_run(run_id, "interrupted", "interrupted by the user (Ctrl-C) during "
                         f"{_current_stage(timings)}")
        raise
    except BaseException as exc:
        store.update_run(run_id, timings=timings)
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        store.finish_run(run_id, "failed", f"{type(exc).__name__}: {message}")
        raise
    store.finish_run(run_id, "complete")
    outcome.status = "complete"
    return outcome


def _current_stage(timings: dict[str, float]) -> str:
    done = [s for s in ("index", "search", "grade", "metrics") if s in timings]
    stages = ("index", "search", "grade", "metrics")
    return stages[len(done)] if len(done) < len(stages) else "finishing"


def _run_stages(
    collection: Collection,
    config: RunConfig,
    store: Any,
    data_dir: Path,
    run_id: str,
    queries: list[Query],
    qrels: dict[str, dict[str, int]],
    threshold: int,
    timings: dict[str, float],
    progress: Progress | None,
) -> RunOutcome:
    from engine.collections import collection_fingerprint
    from indexes.build import build_searchers

    report = progress or (lambda stage, done, total: None)

    store.update_run(run_id, stage="index")
    t0 = time.perf_counter()
    built = build_searchers(
        collection, config.index, data_dir, strategies=config.strategies, progress=report,
        collection_fingerprint=collection_fingerprint(collection),
    )
    timings["index"] = time.perf_counter() - t0
    stats = {"queries": len(queries), "documents": len(collection.documents),
             "index": built.stats, "index_timings": built.timings}
    store.update_run(run_id, timings=timings, skipped=built.skipped, stats=stats)

    store.update_run(run_id, stage="search")
    t0 = time.perf_counter()
    texts = [q.text for q in queries]
    query_ids = [q.query_id for q in queries]
    hits: dict[str, list[SearchHits]] = {}
    strategies = [s for s in config.strategies if s in built.searchers]
    for i, strategy in enumerate(strategies):
        report(f"search {strategy}", i, len(strategies))
        hits[strategy] = built.searchers[strategy].search(texts, config.retrieval_depth)
        report(f"search {strategy}", i + 1, len(strategies))
    timings["search"] = time.perf_counter() - t0
    store.update_run(run_id, stage="grade", timings=timings)

    t0 = time.perf_counter()
    grades = [
        Grade(qid, doc_id, grade, "human")
        for qid, judged in qrels.items()
        for doc_id, grade in judged.items()
    ]
    timings["grade"] = time.perf_counter() - t0

    store.update_run(run_id, stage="metrics", timings=timings)
    t0 = time.perf_counter()
    cutoffs = sorted({c for c in STANDARD_CUTOFFS if c <= config.retrieval_depth}
                     | {config.k, config.retrieval_depth})
    per_query = per_query_metrics(hits, query_ids, qrels, threshold, cutoffs)
    summary = summarise(per_query, config.n_bootstrap, config.seed)
    timings["metrics"] = time.perf_counter() - t0

    docs_by_id = {d.doc_id: d for d in collection.documents}
    keep = {d.doc_id for hs in hits.values() for h in hs for d in h.docs}
    keep |= {doc_id for judged in qrels.values() for doc_id in judged}
    keep |= {q.source_doc_id for q in queries if q.source_doc_id}
    with store.transaction() as con:
        store.clear_run_contents(con, run_id)
        store.write_queries(con, run_id, queries)
        for strategy, strategy_hits in hits.items():
            store.write_results(con, run_id, strategy, query_ids, strategy_hits)
        store.write_grades(con, run_id, grades)
        store.write_documents(con, run_id, [docs_by_id[d] for d in sorted(keep) if d in docs_by_id])
        store.write_metric_values(con, run_id, per_query)
        store.write_metric_summary(con, run_id, summary)
    store.update_run(run_id, timings=timings)
    return RunOutcome(run_id, "running", skipped=built.skipped, notes=list(collection.notes))


def per_query_metrics(
    hits: dict[str, Sequence[SearchHits]],
    query_ids: Sequence[str],
    judgments: dict[str, dict[str, int]],
    threshold: int,
    cutoffs: Sequence[int],
) -> list[tuple[str, str, str, int, float]]:
    """Every metric for every strategy, query and cut-off: rows (strategy, query, metric, k, value).

    Unjudged documents have grade None (0 in the metrics; visible in `judged`).
    """
    from engine.metrics import compute_metrics

    rows: list[tuple[str, str, str, int, float]] = []
    for strategy, strategy_hits in hits.items():
        for qid, h in zip(query_ids, strategy_hits, strict=True):
            judged = judgments.get(qid, {})
            grades = [judged.get(d.doc_id) for d in h.docs]
            pool = list(judged.values())
            for k in cutoffs:
                for metric, value in compute_metrics(grades, pool, k, threshold).items():
                    rows.append((strategy, qid, metric, k, float(value)))
    return rows


def summarise(
    rows: Sequence[tuple[str, str, str, int, float]], n_bootstrap: int, seed: int
) -> list[tuple[str, str, int, float, float, float, int]]:
    """Mean and 95% bootstrap CI per (strategy, metric, k): rows (strategy, metric, k, mean, lo, hi, n)."""
    from engine.statistics import bootstrap_ci

    groups: dict[tuple[str, str, int], list[float]] = {}
    for strategy, _qid, metric, k, value in rows:
        groups.setdefault((strategy, metric, k), []).append(value)
    out = []
    for (strategy, metric, k), values in groups.items():
        ci = bootstrap_ci(values, n_resamples=n_bootstrap, seed=seed)
        out.append((strategy, metric, k, ci.mean, ci.low, ci.high, len(values)))
    return out
