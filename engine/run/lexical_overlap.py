"""Lexical overlap of a generated query with the document it was written from.

A query that copies its source document's words is easy for BM25 and says little about how a
search system serves people who do not know the document's wording. Per generated query:

- ``term_overlap``: the share of the query's distinct terms that occur in the document,
  |terms(q) & terms(d)| / |terms(q)| (a query with no term -> 0.0).
- ``longest_span``: the longest run of consecutive query terms that also occurs consecutively
  in the document (0 when no term is shared).

Terms are the query generator's normalised tokens (NFKC, lower case, runs of letters/digits), so
the overlap and the copied-span filter of engine/llm/querygen.py measure the same thing.

Bands for Results (by term overlap): low < 0.5 <= medium < 0.8 <= high.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from searchgrade.core.records import Document, Query
from searchgrade.engine.llm.querygen import ngrams, normalise_tokens

#: (lower bound, name) of the overlap bands, highest first.
BANDS: tuple[tuple[float, str], ...] = ((0.8, "high (≥ 80% of terms)"), (0.5, "medium (50–80%)"),
                                        (0.0, "low (< 50%)"))


class Overlap(NamedTuple):
    term_overlap: float
    longest_span: int


def lexical_overlap(query_text: str, document_text: str) -> Overlap:
    """The term overlap and longest shared span of a query with a document (see module doc)."""
    query = normalise_tokens(query_text)
    doc = normalise_tokens(document_text)
    terms = set(query)
    if not terms:
        return Overlap(0.0, 0)
    shared = terms & set(doc)
    span = 1 if shared else 0
    # A shared span of n terms contains one of n - 1, so grow n until none is shared.
    while span and span < len(query) and _shares_span(query, ngrams(doc, span + 1), span + 1):
        span += 1
    return Overlap(len(shared) / len(terms), span)


def _shares_span(query: Sequence[str], doc_ngrams: set[tuple[str, ...]], n: int) -> bool:
    return any(tuple(query[i : i + n]) in doc_ngrams for i in range(len(query) - n + 1))


def query_overlaps(queries: Iterable[Query], documents: Mapping[str, Document]) -> list[tuple[str, float, int]]:
    """(query_id, term_overlap, longest_span) of every query with a source document in ``documents``."""
    rows = []
    for q in queries:
        doc = documents.get(q.source_doc_id) if q.source_doc_id else None
        if doc is not None:
            overlap = lexical_overlap(q.text, doc.content)
            rows.append((q.query_id, overlap.term_overlap, overlap.longest_span))
    return rows


def band(term_overlap: float) -> str:
    """The name of the overlap band ``term_overlap`` falls in."""
    for low, name in BANDS:
        if term_overlap >= low:
            return name
    return BANDS[-1][1]
