"""Training pairs for a reranker: every graded (query, document), plus hard negatives.

Labels. Each graded pair is one example with label ``grade / top grade`` (the run's scale: 1 for
binary qrels, 3 for the judge, 4 for Cranfield), clamped to [0, 1]; graded labels are soft targets
that follow the linear gain of DCG. A failed judgment is no label at all (neither relevant nor
not). Where a pair has a human grade and an LLM grade, the human grade is the one used.

Hard negatives. Per query, ``negatives`` documents that no label covers are drawn (seeded, per
query, so a query's negatives do not depend on which other queries train with it) from the
candidates the base strategies ranked at ``first``..``last`` (1-based). They are the documents
the reranker must learn to push down. Leaving out the top ranks matters where labels are
incomplete: an unjudged document near the top of a good ranking is more often an unjudged
relevant one than a true negative, and training it as 0 would teach the model the wrong thing.
Runs judged by the LLM grade the top ``depth`` of every strategy, so their unjudged candidates
are from deeper ranks anyway.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.training.trainer import LabelledPair

#: Label sources in order of precedence: a human grade wins over the judge's.
SOURCE_ORDER = ("human", "llm")


@dataclass
class QueryLabels:
    """One query with its grades, as training sees it.

    Attributes:
        grades: doc id -> grade (valid grades only).
        sources: doc id -> where the grade came from ("human" or "llm").
        failed: doc ids whose judgment failed: no label, and never drawn as a negative.
    """

    query_id: str
    text: str
    source_doc_id: str | None = None
    grades: dict[str, int] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class NegativeSampling:
    """How many unjudged candidates per query become negatives, and from which ranks."""

    negatives: int = 4
    first: int = 11
    last: int = 50

    def __post_init__(self) -> None:
        if not isinstance(self.negatives, int) or isinstance(self.negatives, bool) or self.negatives < 0:
            raise SearchGradeError(f"--negatives of {self.negatives!r} must be a whole number >= 0")
        if not (isinstance(self.first, int) and isinstance(self.last, int) and 1 <= self.first <= self.last):
            raise SearchGradeError(
                f"--negative-ranks {self.first}-{self.last} must be FIRST-LAST with 1 <= FIRST <= LAST, "
                "e.g. 11-50"
            )


def labels_from_grades(queries: Sequence[Mapping[str, object]],
                       grades: Sequence[Mapping[str, object]]) -> list[QueryLabels]:
    """Per query, its grades with their sources, from a run's stored queries and grades rows.

    A pair graded by several sources keeps the first in SOURCE_ORDER; unknown sources come last.
    """
    by_id = {str(q["query_id"]): QueryLabels(str(q["query_id"]), str(q["text"]),
                                             q.get("source_doc_id") or None)  # type: ignore[arg-type]
             for q in queries}
    rank = {source: i for i, source in enumerate(SOURCE_ORDER)}
    for g in grades:
        labels = by_id.get(str(g["query_id"]))
        if labels is None:
            continue
        doc_id, source, grade = str(g["doc_id"]), str(g["source"]), g["grade"]
        held = labels.sources.get(doc_id)
        if held is not None and rank.get(held, len(rank)) <= rank.get(source, len(rank)):
            continue
        if grade is None:
            if held is None:
                labels.failed.add(doc_id)
            continue
        labels.failed.discard(doc_id)
        labels.grades[doc_id] = int(grade)  # type: ignore[call-overload]
        labels.sources[doc_id] = source
    return list(by_id.values())


def label_value(grade: int, top_grade: int) -> float:
    """grade / top_grade, clamped to [0, 1] (negative grades, e.g. TREC's -2 for spam, are 0)."""
    if top_grade < 1:
        raise SearchGradeError(f"the run's top grade is {top_grade}: no grade can count as relevant")
    return min(1.0, max(0.0, grade / top_grade))


def hard_negatives(query: QueryLabels, ranked_lists: Sequence[Sequence[str]],
                   sampling: NegativeSampling, seed: int,
                   known: Mapping[str, str] | None = None) -> list[str]:
    """Up to ``sampling.negatives`` unlabelled candidates at ranks first..last of any list.

    Drawn with a generator seeded by (seed, query id); candidates are taken in order of their
    best rank (then id) before sampling, so the draw does not depend on list order.
    ``known`` limits the draw to documents with content (doc id -> content).
    """
    best: dict[str, int] = {}
    for ranked in ranked_lists:
        for rank, doc_id in enumerate(ranked[sampling.first - 1:sampling.last], start=sampling.first):
            if doc_id in query.grades or doc_id in query.failed:
                continue
            if known is not None and doc_id not in known:
                continue
            if rank < best.get(doc_id, rank + 1):
                best[doc_id] = rank
    pool = sorted(best, key=lambda d: (best[d], d))
    if len(pool) <= sampling.negatives:
        return pool
    return random.Random(f"{seed}:{query.query_id}").sample(pool, sampling.negatives)


@dataclass
class PairStats:
    """Counts of what a training set holds."""

    queries: int = 0
    pairs: int = 0
    positives: int = 0
    judged_negatives: int = 0
    hard_negatives: int = 0
    by_source: dict[str, int] = field(default_factory=dict)
    skipped_missing_documents: int = 0

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def training_pairs(
    queries: Sequence[QueryLabels],
    candidates: Mapping[str, Sequence[Sequence[str]]],
    contents: Mapping[str, str],
    top_grade: int,
    sampling: NegativeSampling,
    seed: int,
) -> tuple[list[LabelledPair], PairStats]:
    """The examples for ``queries``: every graded document, then hard negatives (label 0).

    Args:
        candidates: query id -> the base strategies' ranked doc ids (one list per strategy).
        contents: doc id -> what the reranker reads (title and text); graded documents missing
            from it (no longer in the collection) are skipped and counted.
        top_grade: the run's top grade (labels are grade / top_grade).
    """
    pairs: list[LabelledPair] = []
    stats = PairStats()
    for query in queries:
        stats.queries += 1
        for doc_id in sorted(query.grades):
            content = contents.get(doc_id)
            if content is None:
                stats.skipped_missing_documents += 1
                continue
            value = label_value(query.grades[doc_id], top_grade)
            pairs.append(LabelledPair(query.text, content, value))
            source = query.sources.get(doc_id, "human")
            stats.by_source[source] = stats.by_source.get(source, 0) + 1
            if value > 0:
                stats.positives += 1
            else:
                stats.judged_negatives += 1
        for doc_id in hard_negatives(query, candidates.get(query.query_id, ()), sampling, seed,
                                     known=contents):
            pairs.append(LabelledPair(query.text, contents[doc_id], 0.0))
            stats.hard_negatives += 1
    stats.pairs = len(pairs)
    return pairs, stats
