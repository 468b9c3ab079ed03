"""Human labels in a run's metrics: applied as a run is graded, and "re-score with the latest labels".

A run's stored metrics never change after it completes. To see what people's ratings change,
``rescore_run`` makes a *new* run from the parent's stored search results (no search, no LLM
call, a derived run: engine/run/derived.py): the same queries, results and documents, the parent's
grades with the latest human labels applied (human grades win, and the judge's grade is kept beside
them for agreement), every metric and CI computed again with the pipeline's own scoring.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from searchgrade.core.records import Grade, Query, SearchGradeError
from searchgrade.engine.labels.ratings import Rating, RunLabels, human_grade, latest_per_rater, to_run_scale
from searchgrade.engine.run.derived import derive_run, stored_grades

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


def label_source_with_people(label_source: str) -> str:
    """The label source of a run once human labels are in it."""
    return {"human": "human", "clicks": "human+clicks", "clicks+llm": "human+clicks+llm"}.get(label_source,
                                                                                            "human+llm")


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
    config = RunConfig.from_json(parent.config).to_json() | {"rescored_from": parent.run_id}
    rescore = {"parent": parent.run_id, "rated_pairs": len(labels.ratings), "grades_changed": changed,
               "raters": labels.raters(), "stale_ratings": labels.stale, "labels_through": str(labels.latest())}
    return derive_run(store, parent, grades, name=name or f"{parent.name} · re-scored",
                      label_source=label_source_with_people(parent.label_source), config=config,
                      note=f"re-scored from run {parent.run_id} with {len(labels.ratings)} human-rated pairs "
                      f"({changed} grades changed); same search results, no search or LLM call",
                      stats={"rescore": rescore}, stage="rescore", started=started, on_complete=on_complete)
