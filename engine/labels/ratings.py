"""Human labels: people's 0-3 ratings of (query, document) pairs, and how they reach a run.

A rating belongs to a collection (by name), so every later run on it reuses it. It applies to a
run's pair when all of these hold:

- the document id matches and, where the rating recorded the document's content hash, the run's
  copy of the document has the same content (a rating of an older text is *stale* and left out);
- the query text matches the run's query text; a rating without a text (an imported qrels line)
  matches by query id instead. Generated query ids (``g-<doc>-n<i>``) name different questions
  in different runs, so the text is the query's identity.

Several raters may rate one pair, and a rater may change their mind: each rater's latest rating
counts once, and the pair's human grade is the lower median of those (with two raters who
disagree by one, the lower grade: a cautious choice for "is this relevant"). Human grades win
over LLM grades; they never touch a collection's qrels file.

Ratings are on the judge's 0-3 scale. A run whose labels are binary (0/1) takes a rating of 2 or
3 as 1, as the judge's grades are taken there; a run on another scale (0-4, say) cannot mix them.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.config import JUDGE_MAX_GRADE, JUDGE_THRESHOLD

#: Where a rating came from.
ORIGINS = ("app", "review", "import")
#: The rating scale.
GRADES = tuple(range(JUDGE_MAX_GRADE + 1))
#: Longest rater name and note kept.
MAX_RATER_CHARS = 80
MAX_NOTE_CHARS = 2000


def content_hash(title: str, text: str) -> str:
    """sha256 of a document's content as it is judged (searchgrade.core.records.Document.content)."""
    content = f"{title} {text}".strip() if title else text
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Rating:
    """One person's grade of one (query, document) pair, as stored."""

    label_id: str
    collection_name: str
    query_id: str
    query_text: str | None
    doc_id: str
    content_hash: str | None
    grade: int
    rater: str
    note: str | None
    origin: str
    run_id: str | None
    created_at: datetime


def check_rater(rater: str) -> str:
    """A rater name, trimmed; raises SearchGradeError when empty or too long."""
    name = (rater or "").strip()
    if not name:
        raise SearchGradeError("a rating needs the rater's name: type your name first")
    if len(name) > MAX_RATER_CHARS:
        raise SearchGradeError(f"rater name of {len(name)} characters is too long: keep it under "
                               f"{MAX_RATER_CHARS}")
    return name


def new_rating(*, collection_name: str, query_id: str, query_text: str | None, doc_id: str,
               content_hash: str | None, grade: int, rater: str, note: str | None = None,
               origin: str = "app", run_id: str | None = None) -> dict[str, Any]:
    """A rating row to store (``Store.add_labels``), validated."""
    if isinstance(grade, bool) or grade not in GRADES:
        raise SearchGradeError(f"grade {grade!r} is not on the 0-3 scale: use 0, 1, 2 or 3")
    if origin not in ORIGINS:
        raise ValueError(f"origin {origin!r} is not one of {ORIGINS}")
    note = (note or "").strip() or None
    if note is not None and len(note) > MAX_NOTE_CHARS:
        raise SearchGradeError(f"note of {len(note)} characters is too long: keep it under {MAX_NOTE_CHARS}")
    return {"label_id": uuid.uuid4().hex, "collection_name": collection_name, "query_id": query_id,
            "query_text": query_text, "doc_id": doc_id, "content_hash": content_hash, "grade": int(grade),
            "rater": check_rater(rater), "note": note, "origin": origin, "run_id": run_id}


def latest_per_rater(ratings: Iterable[Rating]) -> dict[str, Rating]:
    """Each rater's latest rating (by time, then storage order)."""
    out: dict[str, Rating] = {}
    for r in sorted(ratings, key=lambda r: r.created_at):
        out[r.rater] = r
    return out


def human_grade(ratings: Iterable[Rating]) -> int | None:
    """The pair's human grade: the lower median of each rater's latest grade (None: no rating)."""
    grades = sorted(r.grade for r in latest_per_rater(ratings).values())
    if not grades:
        return None
    return grades[(len(grades) - 1) // 2]


def to_run_scale(grade: int, grade_min: int | None, grade_max: int | None) -> int:
    """A 0-3 rating on a run's scale: itself on 0-3, 1 if >= 2 on binary labels.

    Raises:
        SearchGradeError: the run's labels are on another scale.
    """
    if grade_max is None or grade_max == JUDGE_MAX_GRADE and (grade_min or 0) >= 0:
        return grade
    if grade_max <= 1:
        return int(grade >= JUDGE_THRESHOLD)
    raise SearchGradeError(
        f"this run's labels are on a {grade_min}-{grade_max} scale; ratings are 0-3 and cannot be "
        "mixed into it: rate an LLM-judged run of the collection, or import qrels on the run's scale"
    )


def scale_accepts_ratings(grade_min: int | None, grade_max: int | None) -> bool:
    try:
        to_run_scale(0, grade_min, grade_max)
    except SearchGradeError:
        return False
    return True


@dataclass
class RunLabels:
    """The ratings that apply to one run's pairs."""

    #: (query_id, doc_id) -> the ratings that apply, oldest first.
    ratings: dict[tuple[str, str], list[Rating]] = field(default_factory=dict)
    #: Ratings left out because the document's content changed since.
    stale: int = 0

    def grades(self) -> dict[tuple[str, str], int]:
        """(query_id, doc_id) -> the pair's human grade (0-3)."""
        return {pair: grade for pair, rs in self.ratings.items()
                if (grade := human_grade(rs)) is not None}

    def raters(self) -> list[str]:
        return sorted({r.rater for rs in self.ratings.values() for r in rs})

    def latest(self):
        times = [r.created_at for rs in self.ratings.values() for r in rs]
        return max(times) if times else None


def match_ratings(ratings: Iterable[Rating], query_texts: Mapping[str, str],
                  doc_hashes: Mapping[str, str]) -> RunLabels:
    """The ratings that apply to a run (see the module docstring).

    Args:
        ratings: The collection's ratings.
        query_texts: The run's queries: query_id -> text.
        doc_hashes: The run's documents that could be rated: doc_id -> content hash.
    """
    by_text: dict[str, list[str]] = {}
    for qid, text in query_texts.items():
        by_text.setdefault(text, []).append(qid)
    out = RunLabels()
    for r in ratings:
        if r.doc_id not in doc_hashes:
            continue
        qids = by_text.get(r.query_text, []) if r.query_text is not None else (
            [r.query_id] if r.query_id in query_texts else [])
        if not qids:
            continue
        if r.content_hash is not None and r.content_hash != doc_hashes[r.doc_id]:
            out.stale += 1
            continue
        for qid in qids:
            out.ratings.setdefault((qid, r.doc_id), []).append(r)
    return out


def rating_from_row(row: Mapping[str, Any]) -> Rating:
    return Rating(**{name: row[name] for name in Rating.__dataclass_fields__})


def run_labels(store: Any, run: Any, doc_ids: Sequence[str] | None = None) -> RunLabels:
    """The collection's ratings that apply to a stored run's pairs (searchgrade.engine.store.Store, RunRecord)."""
    rows = store.labels(run.collection_name, doc_ids=doc_ids)
    if not rows:
        return RunLabels()
    ratings = [rating_from_row(r) for r in rows]
    wanted = sorted({r.doc_id for r in ratings})
    documents = store.documents(run.run_id, wanted)
    hashes = {d: content_hash(doc["title"], doc["text"]) for d, doc in documents.items()}
    texts = {q["query_id"]: q["text"] for q in store.queries(run.run_id)}
    return match_ratings(ratings, texts, hashes)
