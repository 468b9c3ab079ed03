"""Human labels in a run's metrics: applied as a run is graded, and "re-score with the latest labels".

A run's stored metrics never change after it completes. To see what people's ratings change,
``rescore_run`` makes a *new* run from the parent's stored search results (no search, no LLM
call): the same queries, results and documents, the parent's grades with the latest human labels
applied (human grades win, and the judge's grade is kept beside them for agreement), every metric
and CI computed again with the pipeline's own scoring. The new run links to its parent
(``parent_run_id``), so Trends plots it after the parent and Compare pairs the two.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from searchgrade.core.records import Grade, Query, ScoredDoc, SearchGradeError, SearchHits
from searchgrade.engine.labels.ratings import Rating, RunLabels, human_grade, latest_per_rater, to_run_scale
from searchgrade.engine.run.pool import still_pooled_unjudged
from searchgrade.engine.run.scoring import per_query_metrics, source_found_metrics, stored_cutoffs, summarise

Pair = tuple[str, str]


def _reason(ratings: Iterable[Rating]) -> str:
    latest = latest_per_rater(ratings)
    parts = [f"{r.rater}: {r.grade}" + (f" ({r.note})" if r.note else "") for r in latest.values()]
    return "rated by " + "; ".join(parts)


def apply_labels(grades: Iterable[Grade], labels: RunLabels, grade_min: int | None,
                 grade_max: int | None) -> tuple[list[Grade], int]:
    """The grades with human labels winning, and how many pairs changed grade.

    A labelled pair becomes source "human" with the human grade on the run's scale; the judge's
    grade, where there was one, stays in ``llm_grade``. A labelled pair the run had no grade for
    (an unjudged result) is added.
    """
    by_pair: dict[Pair, Grade] = {}
    for g in grades:
        by_pair[(g.query_id, g.doc_id)] = g
    changed = 0
    for pair, ratings in labels.ratings.items():
        grade = human_grade(ratings)
        if grade is None:
            continue
        grade = to_run_scale(grade, grade_min, grade_max)
        old = by_pair.get(pair)
        llm = None
        if old is not None:
            llm = old.llm_grade if old.llm_grade is not None else (old.grade if old.source == "llm" else None)
        new = Grade(pair[0], pair[1], grade, "human", None, None, _reason(ratings), llm)
        if old is None or old.grade != new.grade or old.source != "human" or old.reason != new.reason:
            changed += old is None or old.grade != new.grade
            by_pair[pair] = new
    return list(by_pair.values()), changed


def labels_at_grading(store: Any, collection_name: str, queries: Iterable[Query],
                      documents: Mapping[str, Any], grades: list[Grade], grade_min: int | None,
                      grade_max: int | None) -> tuple[list[Grade], dict[str, Any] | None, str | None]:
    """A new run's grades with the collection's human labels applied (people judged once, for
    every later run), the summary for the run's stats, and a note when they cannot apply.

    Args:
        documents: The collection's documents by id (core.records.Document).
    """
    from searchgrade.engine.labels.ratings import (
        content_hash,
        match_ratings,
        rating_from_row,
        scale_accepts_ratings,
    )

    rows = store.labels(collection_name)
    if not rows:
        return grades, None, None
    if not scale_accepts_ratings(grade_min, grade_max):
        return grades, None, (f"{len(rows)} human ratings of {collection_name} were not used: ratings "
                              f"are 0-3 and this run's labels {grade_min}-{grade_max}")
    ratings = [rating_from_row(r) for r in rows]
    hashes = {d: content_hash(documents[d].title, documents[d].text)
              for d in {r.doc_id for r in ratings} if d in documents}
    labels = match_ratings(ratings, {q.query_id: q.text for q in queries}, hashes)
    if not labels.ratings:
        return grades, None, None
    merged, changed = apply_labels(grades, labels, grade_min, grade_max)
    summary = {"rated_pairs": len(labels.ratings), "grades_changed": changed, "raters": labels.raters(),
               "stale_ratings": labels.stale, "labels_through": str(labels.latest())}
    return merged, summary, None


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


def label_source_with_people(label_source: str) -> str:
    """The label source of a run once human labels are in it."""
    return {"human": "human", "clicks": "human+clicks"}.get(label_source, "human+llm")


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


def rescore_run(store: Any, run_id: str, *, name: str | None = None,
                on_complete: Callable[[Any, str], None] | None = None) -> str:
    """A new run: the parent's stored results, graded with the latest human labels, scored anew.

    Args:
        on_complete: Called as on_complete(store, run_id) once the new run is complete (as for
            engine.run.pipeline.run_evaluation's hook).

    Raises:
        SearchGradeError: the parent is not complete, its scale cannot take ratings, no rating
            applies to it, or the labels change nothing since it was scored.
    """
    from searchgrade.engine.labels.ratings import run_labels
    from searchgrade.engine.run.config import RunConfig

    started = time.perf_counter()
    parent = store.get_run(run_id)
    if parent.status != "complete":
        raise SearchGradeError(f"run {parent.run_id} is {parent.status}; only a complete run can be "
                               "re-scored")
    labels = run_labels(store, parent)
    if not labels.ratings:
        raise SearchGradeError(
            f"no human rating applies to run {parent.run_id}'s results; rate some in the drill-down or "
            "the review queue first" + (f" ({labels.stale} ratings are of documents that changed since)"
                                        if labels.stale else ""))
    grades, changed = apply_labels(stored_grades(store, parent.run_id), labels, parent.grade_min,
                                   parent.grade_max)
    if set(grades) == set(stored_grades(store, parent.run_id)):
        raise SearchGradeError(f"run {parent.run_id} already holds every applicable label "
                               f"({len(labels.ratings)} rated pairs): nothing to re-score")
    config = RunConfig.from_json(parent.config)
    queries, hits = stored_hits(store, parent.run_id)
    query_ids = [q.query_id for q in queries]
    judgments, failed = judgments_of(grades)
    cutoffs = stored_cutoffs(parent.k, parent.depth)
    # A pooled-but-unjudged pair people rated is judged now.
    pooled = still_pooled_unjudged(store.pooled_unjudged(parent.run_id), grades)
    per_query = per_query_metrics(hits, query_ids, judgments, parent.threshold, cutoffs, failed=failed,
                                  pooled_unjudged=pooled, max_grade=parent.grade_max)
    if parent.mode == "llm":
        per_query += source_found_metrics(hits, queries, cutoffs)
    summary = summarise(per_query, config.n_bootstrap, config.seed)
    stats = dict(parent.stats)
    if pooled:
        stats["pooled_unjudged"] = sum(len(docs) for docs in pooled.values())
    else:
        stats.pop("pooled_unjudged", None)
    stats["rescore"] = {"parent": parent.run_id, "rated_pairs": len(labels.ratings), "grades_changed": changed,
                        "raters": labels.raters(), "stale_ratings": labels.stale,
                        "labels_through": str(labels.latest())}
    new_id = store.create_run(
        name=name or f"{parent.name} · re-scored", collection_name=parent.collection_name,
        collection_path=parent.collection_path, mode=parent.mode,
        label_source=label_source_with_people(parent.label_source), grade_min=parent.grade_min,
        grade_max=parent.grade_max, threshold=parent.threshold, k=parent.k, depth=parent.depth,
        config=config.to_json() | {"rescored_from": parent.run_id},
        notes=[*parent.notes, f"re-scored from run {parent.run_id} with {len(labels.ratings)} human-rated "
               f"pairs ({changed} grades changed); same search results, no search or LLM call"],
        parent_run_id=parent.run_id,
    )
    try:
        with store.transaction() as con:
            store.copy_run_contents(con, parent.run_id, new_id, ("queries", "results", "failed_queries",
                                                                 "documents", "query_overlap", "judge_grades"))
            store.write_grades(con, new_id, grades)
            store.write_pooled_unjudged(con, new_id, [(q, d) for q, docs in pooled.items() for d in docs])
            store.write_metric_values(con, new_id, per_query)
            store.write_metric_summary(con, new_id, summary)
        store.update_run(new_id, skipped=parent.skipped, stats=stats,
                         timings={"rescore": time.perf_counter() - started})
    except BaseException as exc:
        store.finish_run(new_id, "failed", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        raise
    store.finish_run(new_id, "complete")
    if on_complete is not None:
        on_complete(store, new_id)
    return new_id
