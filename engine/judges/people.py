"""What the judges' report compares, read from a stored run: people's grades and each judge's.

**People's grade** of a retrieved pair (for every figure of the report): its qrels grade, 0 for a
retrieved pair the qrels do not judge (as the run's metrics count it), and an app rating where
one applies (ratings win: engine/labels/ratings.py, live, so a rating given since the run counts).
A run without qrels (LLM mode, clicks) has people's grades only where people rated. Everything is
on the judge's 0-3 scale: a binary label's 1 counts as 3, a pooled-but-unjudged mark (a negative
grade) as 0; labels on another scale (0-4, say) cannot be compared with a 0-3 judge and are refused.

**A judge's grades**: each judge's row in the store's judge_grades (a panel's members and the
panel), or, for a run with one judge and no such row (every run before migration 17), the judge
grade kept beside each grade (``grades.llm_grade``, or the grade itself where the judge's is the
run's), under the judge's model name. A failed judgment is None: 0 in a metric, as the run counts
it, and left out of item agreement.

Interface for other proxies (clicks, issue 36): any mapping pair -> grade can stand where a judge's
grades stand (``RunGrades.judges``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.config import JUDGE_MAX_GRADE

if TYPE_CHECKING:
    from searchgrade.engine.store import RunRecord, Store

Pair = tuple[str, str]


@dataclass
class RunGrades:
    """A stored run's rankings with people's and every judge's grades of its pairs."""

    run: RunRecord
    #: The run's queries in order, and their texts.
    query_ids: list[str]
    texts: dict[str, str]
    #: strategy -> query -> every stored result's doc id in rank order (a query it failed on absent).
    ranked: dict[str, dict[str, list[str]]]
    #: People's 0-3 grade per pair (unjudged retrieved pairs 0 where the run has qrels).
    people: dict[Pair, int]
    #: The pairs people judged explicitly (a qrels line or a rating): where examples come from.
    explicit: set[Pair]
    #: People's grades per query (the qrels' and ratings', 0-3): the one ideal both sides share.
    pool: dict[str, list[int]]
    #: judge name -> pair -> its grade (None: the judgment failed).
    judges: dict[str, dict[Pair, int | None]]
    #: Where people's grades come from, in words ("qrels, an unjudged result counting 0 and 12 rated pairs").
    people_source: str
    notes: list[str] = field(default_factory=list)

    def top(self, k: int) -> dict[str, dict[str, list[str]]]:
        """Each strategy's top k per query."""
        return {s: {q: docs[:k] for q, docs in by_query.items()} for s, by_query in self.ranked.items()}


def to_judge_scale(grade: int, grade_max: int | None) -> int:
    """A run's label on the judge's 0-3 scale: binary 1 -> 3, a negative (pooled, unjudged) -> 0."""
    if grade < 0:
        return 0
    return grade * JUDGE_MAX_GRADE if (grade_max or 0) <= 1 else grade


def check_people_scale(run: RunRecord) -> None:
    """Raises SearchGradeError: the run's labels are neither binary nor 0-3."""
    top = run.grade_max or 0
    if top > JUDGE_MAX_GRADE:
        raise SearchGradeError(f"run {run.run_id}'s labels go up to {top}: people's grades are compared with a "
                               "0-3 judge on its scale, binary labels (1 counting as 3) or 0-3 ones; evaluate a "
                               "collection on one of those, or rate its results in the app (0-3)")


def _judge_grades(store: Store, run: RunRecord,
                  grade_rows: Callable[[], list[dict[str, Any]]]) -> dict[str, dict[Pair, int | None]]:
    """Each judge's grades: the stored ones, else (a single-judge run) the run's LLM grades from
    ``grade_rows`` (the run's grades, read once for both uses)."""
    rows = store.judge_grades(run.run_id)
    out: dict[str, dict[Pair, int | None]] = {}
    for r in rows:
        out.setdefault(r["judge"], {})[(r["query_id"], r["doc_id"])] = r["grade"]
    if out:
        return out
    model = (run.stats.get("llm") or {}).get("model") or (run.config.get("llm") or {}).get("model")
    single: dict[Pair, int | None] = {}
    for g in grade_rows():
        if g["llm_grade"] is not None:
            single[(g["query_id"], g["doc_id"])] = g["llm_grade"]
        elif g["source"] == "llm":
            single[(g["query_id"], g["doc_id"])] = g["grade"]
    return {model or "judge": single} if single else {}


def run_grades(store: Store, run_id: str) -> RunGrades:
    """People's and every judge's grades of a stored run (see the module).

    Raises:
        SearchGradeError: the run is not complete, or its labels are on another scale.
    """
    from searchgrade.engine.labels.ratings import run_labels

    run = store.get_run(run_id)
    if run.status != "complete":
        raise SearchGradeError(f"run {run.run_id} is {run.status}; the judges of a complete run are measured")
    check_people_scale(run)
    queries = store.queries(run.run_id)
    stored = store.top_lists(run.run_id, run.depth)
    failed = {(f["strategy"], f["query_id"]) for f in store.failed_queries(run.run_id)}
    # A query a strategy failed on (a backend error) has no ranking; one it answered with nothing, an empty one.
    ranked = {s: {q["query_id"]: by_query.get(q["query_id"], []) for q in queries if (s, q["query_id"]) not in failed}
              for s, by_query in stored.items()}
    people: dict[Pair, int] = {}
    explicit: set[Pair] = set()
    has_qrels = run.mode == "qrels"
    grade_rows = functools.cache(lambda: store.grades(run.run_id))
    if has_qrels:
        for g in grade_rows():
            if g["source"] == "human" and g["grade"] is not None:
                pair = (g["query_id"], g["doc_id"])
                people[pair] = to_judge_scale(int(g["grade"]), run.grade_max)
                explicit.add(pair)
    rated = run_labels(store, run).grades()
    people.update(rated)
    explicit |= set(rated)
    pool: dict[str, list[int]] = {}
    for (q, _), grade in people.items():
        pool.setdefault(q, []).append(grade)
    if has_qrels:
        for by_query in ranked.values():
            for q, docs in by_query.items():
                for d in docs:
                    people.setdefault((q, d), 0)
    source = " and ".join(part for part in (
        "qrels, an unjudged result counting 0" if has_qrels else "",
        f"{len(rated)} rated pair{'s' if len(rated) != 1 else ''}" if rated else "") if part) or "nobody"
    return RunGrades(run, [q["query_id"] for q in queries], {q["query_id"]: q["text"] for q in queries}, ranked,
                     people, explicit, pool, _judge_grades(store, run, grade_rows), source)
