"""Documents from records: the id, title and text columns read, checked, and counted.

``load_documents`` keeps the non-empty documents and stops at the first bad record (with its
location). ``count_documents`` reads the same records the same way but counts what loading would
give (documents, empty ones skipped, repeated ids) instead of stopping at a repeated id, so the app
can show the counts before a run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from searchgrade.core.checks import UniqueIds
from searchgrade.core.records import Document, SearchGradeError
from searchgrade.engine.collections.fields import TEXT_JOINER, DocumentFields
from searchgrade.engine.collections.problems import (
    Shown,
    column_fix,
    examples,
    plural,
    problem,
    show,
    show_names,
    where_short,
)
from searchgrade.engine.collections.readers import Record


def id_value(record: dict[str, Any], column: str, location: str, kind: str, role: str) -> str:
    """The record's id as a string (integers are converted); ``role`` names the column's knob."""
    value = record.get(column)
    if value is None:
        raise problem(location, f"no {column!r} field (fields: {show_names(record)})", column_fix(role))
    if isinstance(value, bool) or not isinstance(value, str | int):
        cli, page = column_fix(role)
        raise problem(location, f"{kind} id {show(value)} is not a string or integer",
                      (f"use string ids, or {cli}", f"use string ids, or {page}"))
    text = str(value)
    if not text.strip():
        raise problem(location, f"{kind} id is empty", f"give every {kind} a non-empty id")
    return text


def text_value(value: Any, column: str, location: str, role: str) -> str:
    """A text cell as a string: missing or null is empty, numbers are converted."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    cli, page = column_fix(role)
    raise problem(location, f"field {column!r} holds {type(value).__name__} {show(value)}",
                  (f"it must be a string: {cli}", f"it must be a string: {page}"))


def read_document(record: dict[str, Any], fields: DocumentFields, location: str) -> Document:
    """One record as a Document (maybe empty); a missing id or text column stops with its location."""
    doc_id = id_value(record, fields.id, location, "document", "id")
    present = [column for column in fields.text if column in record]
    if not present:
        missing = " or ".join(repr(t) for t in fields.text)
        raise problem(location, f"no {missing} field (fields: {show_names(record)})", column_fix("text"))
    texts = [text_value(record[column], column, location, "text") for column in present]
    text = texts[0] if len(texts) == 1 else TEXT_JOINER.join(t.strip() for t in texts if t.strip())
    title = text_value(record.get(fields.title), fields.title, location, "title") if fields.title else ""
    return Document(doc_id, title, text)


def is_empty(document: Document) -> bool:
    return not document.title.strip() and not document.text.strip()


def load_documents(records: Iterable[Record], fields: DocumentFields, shown: Shown,
                   notes: list[str]) -> tuple[list[Document], list[str]]:
    """The non-empty documents, and the ids of the empty ones (skipped, with a note).

    Raises:
        SearchGradeError: A bad record (missing or repeated id, missing text column, a value that
            is not text), no records, or only empty documents.
    """
    documents: list[Document] = []
    seen = UniqueIds("document", where_short)
    empty_ids: list[str] = []
    saw_title = fields.title is None
    for location, record in records:
        document = read_document(record, fields, location)
        saw_title = saw_title or fields.title in record
        seen.add(document.doc_id, location)
        if is_empty(document):
            empty_ids.append(document.doc_id)
        else:
            documents.append(document)
    if not len(seen):
        raise problem(shown.label, "no documents",
                      f"add one record per document with {fields.id!r} and {fields.text[0]!r}")
    if not documents:
        cli, page = column_fix("text")
        raise problem(shown.label, f"all {len(empty_ids)} documents have an empty title and text",
                      (f"check the text column: {cli}", f"check the text column: {page}"))
    if empty_ids:
        notes.append(f"{shown.short}: skipped {plural(len(empty_ids), 'empty document')} "
                     f"(ids {examples(empty_ids)})")
    if not saw_title:
        notes.append(f"{shown.short}: no {fields.title!r} field in any document, titles are empty")
    return documents, empty_ids


@dataclass
class DocumentCounts:
    """What loading a file with a mapping would give."""

    records: int = 0
    documents: int = 0
    empty: int = 0
    #: Ids met more than once (loading stops at the first).
    duplicate_ids: int = 0
    duplicate_examples: list[str] = field(default_factory=list)
    #: The first error loading would stop at other than a repeated id (None: none).
    error: SearchGradeError | None = None


def count_documents(records: Iterable[Record], fields: DocumentFields) -> DocumentCounts:
    """Counts of documents, empty ones and repeated ids; stops at the first other bad record."""
    counts = DocumentCounts()
    seen: set[str] = set()
    repeated: set[str] = set()
    try:
        for location, record in records:
            document = read_document(record, fields, location)
            counts.records += 1
            if document.doc_id in seen:
                if document.doc_id not in repeated and len(counts.duplicate_examples) < 5:
                    counts.duplicate_examples.append(document.doc_id)
                repeated.add(document.doc_id)
                continue
            seen.add(document.doc_id)
            if is_empty(document):
                counts.empty += 1
            else:
                counts.documents += 1
    except SearchGradeError as error:
        counts.error = error
    counts.duplicate_ids = len(repeated)
    return counts
