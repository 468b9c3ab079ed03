"""Records shared by the evaluator (engine/) and the systems under test (indexes/).

Both sides import these; neither imports the other for them. Strategy ids, labels and pairs live
in indexes/registry.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class SearchGradeError(Exception):
    """An expected error a user can fix; its message is one line that says how.

    ``str(error)`` is phrased for the command line (it names the flag to change); ``page`` is the
    same error phrased for the app (it names the picker to change instead), where they differ.
    """

    def __init__(self, message: str, *, page: str | None = None) -> None:
        super().__init__(message)
        self.page = page

    @property
    def page_message(self) -> str:
        """The message as the app shows it (the command-line phrasing where there is no other)."""
        return self.page or str(self)


def first_line(exc: BaseException) -> str:
    """The first line of an error's message, or its type's name when it says nothing: what a
    one-line SearchGradeError quotes of a library's (often long) error."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@dataclass(frozen=True)
class Document:
    doc_id: str
    title: str
    text: str

    @property
    def content(self) -> str:
        """What is indexed and judged: title and text joined by one space."""
        return f"{self.title} {self.text}".strip() if self.title else self.text


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    #: "natural", "keyword" (generated) or "qrels" (from a collection's judgments).
    query_type: str = "qrels"
    source_doc_id: str | None = None


@dataclass
class Collection:
    """A corpus, optionally with queries and human judgments (qrels)."""

    name: str
    path: str
    documents: list[Document]
    queries: list[Query] = field(default_factory=list)
    #: query_id -> doc_id -> grade, or None when the collection has no judgments.
    qrels: dict[str, dict[str, int]] | None = None
    #: Notes for the user about what the loader skipped or dropped (one line each).
    notes: list[str] = field(default_factory=list)
    #: How it was loaded (the loader's keyword arguments, columns resolved), so a run can store it
    #: and a resume load it alike.
    fields: dict[str, Any] = field(default_factory=dict)
    #: query_id -> doc ids whose qrels grade is negative: in the judging pool but not judged, as
    #: trec_eval reads them (their grade in ``qrels`` is 0: not relevant in the standard metrics).
    pooled_unjudged: dict[str, set[str]] = field(default_factory=dict)

    @property
    def has_qrels(self) -> bool:
        return bool(self.qrels)


class ScoredDoc(NamedTuple):
    doc_id: str
    score: float
    rank: int


class Passage(NamedTuple):
    """The chunk of a document a chunked strategy matched it by (its best chunk): the chunk's place
    in the document (0 for the first) and its character span in the document's text."""

    index: int
    start: int
    end: int


class SearchHits(NamedTuple):
    """One query's ranked results from one strategy, and the time it took.

    ``passages``: for a strategy that retrieves chunks, each listed document's matched chunk.
    """

    docs: list[ScoredDoc]
    latency_s: float
    passages: Mapping[str, Passage] | None = None


class Grade(NamedTuple):
    """One (query, document) grade: from human judgments or the LLM judge.

    grade None records a judge failure (never turned into a number); reason says why.
    """

    query_id: str
    doc_id: str
    grade: int | None
    source: str  # "human" or "llm"
    model: str | None = None
    prompt_version: str | None = None
    reason: str | None = None
    #: The LLM judge's grade of the pair, kept where a human label won over it (agreement, PPI).
    llm_grade: int | None = None


def collection_fingerprint(collection: Collection) -> str:
    """A sha256 hex digest over the documents' ids and contents, in order.

    Two collections with the same documents in the same order have the same fingerprint whatever
    their name or path, so it keys index artifacts. Each value is length-prefixed, so no choice of
    ids or texts can make two different document lists hash alike by shifting a boundary.
    """
    digest = hashlib.sha256()
    for doc in collection.documents:
        for value in (doc.doc_id, doc.content):
            data = value.encode("utf-8")
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
    return digest.hexdigest()
