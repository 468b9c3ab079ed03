"""A derived run: a new run made from a parent's stored results with other grades, no search.

Re-scoring with the latest human labels (engine/labels/rescore.py) and judging a pool's holes
(engine/run/judge_pool.py) both make one: they decide the grades, and ``derive_run`` does the
rest once. The parent's queries, results, failed queries, documents and overlaps are copied; every
metric and CI is computed again from the grades with the pipeline's own scoring; the new run links
to its parent (``parent_run_id``), so Trends plots it after the parent and Compare pairs the two.
It is written in one transaction and ends ``complete`` only after its last write (``failed``
otherwise); the parent is never touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import Grade, Query, ScoredDoc, SearchHits
from searchgrade.engine.run.pool import still_pooled_unjudged
from searchgrade.engine.run.scoring import per_query_metrics, source_found_metrics, stored_cutoffs, summarise

if TYPE_CHECKING:
    from searchgrade.engine.store import RunRecord, Store

#: What a derived run copies from its parent, as it is (each judge's grades of a panel included: a
#: re-scored run is measured as its parent was; the query vectors and the exact search of failed
#: queries too: why queries fail reads them, engine/failures/).
COPIED = ("queries", "results", "failed_queries", "documents", "query_overlap", "judge_grades", "query_vectors",
          "exact_search")


def judgments_of(grades: Iterable[Grade]) -> tuple[dict[str, dict[str, int]], dict[str, set[str]]]:
    """What the metrics take from grades: query -> doc -> grade, and the failed pairs (grade None)."""
    judgments: dict[str, dict[str, int]] = {}
    failed: dict[str, set[str]] = {}
    for g in grades:
        if g.grade is None:
            failed.setdefault(g.query_id, set()).add(g.doc_id)
        else:
            judgments.setdefault(g.query_id, {})[g.doc_id] = g.grade
    return judgments, failed


def stored_hits(store: Any, run_id: str) -> tuple[list[Query], dict[str, list[SearchHits]]]:
    """A run's queries and, per strategy, its stored ranked results (scores and latency kept)."""
    queries = [Query(**q) for q in store.queries(run_id)]
    by_key: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    strategies: list[str] = []
    for r in store.results_with_grades(run_id):
        if r["strategy"] not in strategies:
            strategies.append(r["strategy"])
        by_key.setdefault((r["strategy"], r["query_id"]), []).append(r)
    hits = {
        s: [SearchHits([ScoredDoc(r["doc_id"], r["score"], r["rank"]) for r in by_key.get((s, q.query_id), [])],
                       (by_key.get((s, q.query_id)) or [{"latency_ms": 0.0}])[0]["latency_ms"] / 1000.0)
            for q in queries]
        for s in strategies
    }
    return queries, hits


def stored_grades(store: Any, run_id: str) -> list[Grade]:
    return [Grade(g["query_id"], g["doc_id"], g["grade"], g["source"], g["model"], g["prompt_version"],
                  g["reason"], g["llm_grade"]) for g in store.grades(run_id)]


def derive_run(store: Store, parent: RunRecord, grades: list[Grade], *, name: str, label_source: str,
               config: dict[str, Any], note: str, stats: Mapping[str, Any], stage: str, started: float,
               usage: Mapping[str, Mapping[str, int]] | None = None,
               on_complete: Callable[[Any, str], None] | None = None) -> str:
    """The new run: ``parent``'s stored results with ``grades``, scored anew, stored; its id.

    Args:
        label_source, config: the new run's (``config`` as stored, saying what it was derived by).
        note: added to the parent's notes (what was done, "same search results, no search").
        stats: added to the parent's stats (what the derivation did), with the pooled pairs left
            unjudged counted anew.
        stage: the name of its one timing, counted from ``started`` (time.perf_counter()).
        usage: LLM usage to record with the new run: stage -> counters (e.g. the judge's calls).
        on_complete: called as on_complete(store, run_id) once the new run is complete (as for
            engine.run.pipeline.run_evaluation's hook).
    """
    from searchgrade.engine.run.config import RunConfig

    queries, hits = stored_hits(store, parent.run_id)
    judgments, failed = judgments_of(grades)
    # A pooled pair left unjudged by the parent that now has a grade is judged.
    pooled = still_pooled_unjudged(store.pooled_unjudged(parent.run_id), grades)
    cutoffs = stored_cutoffs(parent.k, parent.depth)
    per_query = per_query_metrics(hits, [q.query_id for q in queries], judgments, parent.threshold, cutoffs,
                                  failed=failed, pooled_unjudged=pooled, max_grade=parent.grade_max)
    if parent.mode == "llm":
        per_query += source_found_metrics(hits, queries, cutoffs)
    parent_config = RunConfig.from_json(parent.config)
    summary = summarise(per_query, parent_config.n_bootstrap, parent_config.seed)
    kept = {key: value for key, value in parent.stats.items() if key != "pooled_unjudged"}
    if pooled:
        kept["pooled_unjudged"] = sum(len(docs) for docs in pooled.values())
    new_id = store.create_run(
        name=name, collection_name=parent.collection_name, collection_path=parent.collection_path,
        mode=parent.mode, label_source=label_source, grade_min=parent.grade_min, grade_max=parent.grade_max,
        threshold=parent.threshold, k=parent.k, depth=parent.depth, config=config, notes=[*parent.notes, note],
        parent_run_id=parent.run_id,
    )
    try:
        with store.transaction() as con:
            store.copy_run_contents(con, parent.run_id, new_id, COPIED)
            store.write_grades(con, new_id, grades)
            store.write_pooled_unjudged(con, new_id, [(q, d) for q, docs in pooled.items() for d in docs])
            store.write_metric_values(con, new_id, per_query)
            store.write_metric_summary(con, new_id, summary)
        for usage_stage, counters in (usage or {}).items():
            counted = {key: value for key, value in counters.items() if value}
            if counted:
                store.add_llm_usage(new_id, usage_stage, counted)
        store.update_run(new_id, skipped=parent.skipped, stats={**kept, **stats},
                         timings={stage: time.perf_counter() - started})
    except BaseException as exc:
        store.finish_run(new_id, "failed", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        raise
    store.finish_run(new_id, "complete")
    if on_complete is not None:
        on_complete(store, new_id)
    return new_id
