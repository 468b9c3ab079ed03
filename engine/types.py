"""Records shared by the evaluator and the systems under test."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

#: Strategy ids, in display order. Baselines first, then their reranked twins.
BASE_STRATEGIES = ("ann", "fulltext", "hybrid")
RERANKED_STRATEGIES = ("ann_rerank", "fulltext_rerank", "hybrid_rerank")
STRATEGIES = BASE_STRATEGIES + RERANKED_STRATEGIES

STRATEGY_LABELS = {
    "ann": "ANN (dense)",
    "fulltext": "Full-text (BM25)",
    "hybrid": "Hybrid (RRF)",
    "ann_rerank": "ANN + reranker",
    "fulltext_rerank": "Full-text + reranker",
    "hybrid_rerank": "Hybrid + reranker",
}


class SearchGradeError(Exception):
    """An expected error a user can fix; its message is one line that says how."""


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

    @property
    def has_qrels(self) -> bool:
        return bool(self.qrels)


class ScoredDoc(NamedTuple):
    doc_id: str
    score: float
    rank: int


class SearchHits(NamedTuple):
    """One query's ranked results from one strategy, and the time it took."""

    docs: list[ScoredDoc]
    latency_s: float


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
