"""Which columns hold a document's id, title and text (and a query's id and text): given or guessed.

A column a user names is used as named. One left out is guessed from the columns the file has
(``GUESSES``: ``doc_id`` for the id, ``headline`` for the title, ``body`` for the text, ...; exact
names first, then any case). Several text columns can be joined: ``--text-field abstract,body``,
or a list; their non-empty values are joined by a blank line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from searchgrade.engine.collections.problems import Shown, column_fix, problem, show_names

#: Column names tried, in order, for each role.
GUESSES = {
    "id": ("_id", "id", "doc_id", "docid", "document_id", "doc-id"),
    "title": ("title", "headline", "name"),
    "text": ("text", "body", "content", "abstract", "contents"),
    "query_id": ("_id", "id", "query_id", "query-id", "qid", "topic_id", "topic"),
    "query_text": ("text", "query", "question", "title"),
}
#: What joins the values of several text columns.
TEXT_JOINER = "\n\n"


@dataclass(frozen=True)
class DocumentFields:
    """The columns of a document's id, title (None: no title) and text (one or more, joined)."""

    id: str
    title: str | None
    text: tuple[str, ...]

    def as_options(self) -> dict[str, Any]:
        """As the loader's keyword arguments (stored with a run)."""
        return {"id_field": self.id, "title_field": self.title or "", "text_field": list(self.text)}


@dataclass(frozen=True)
class QueryFields:
    id: str
    text: str

    def as_options(self) -> dict[str, Any]:
        return {"query_id_field": self.id, "query_text_field": self.text}


def guess(columns: Sequence[str], role: str) -> str | None:
    """The first of the role's usual names among the columns (exact, else any case), or None."""
    for name in GUESSES[role]:
        if name in columns:
            return name
    lowered = {str(c).lower(): c for c in reversed(list(columns))}
    for name in GUESSES[role]:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def _is_number(value: str) -> bool:
    try:
        float(value.replace(",", ""))
    except ValueError:
        return False
    return True


def text_like(values: Sequence[Any]) -> bool:
    """Whether a column's sample values read as text: most non-empty ones hold a letter and are not
    numbers (a "price" or "count" column read from a CSV is strings of digits, not text)."""
    strings = [v.strip() for v in values if isinstance(v, str) and v.strip()]
    if not strings:
        return False
    wordy = sum(1 for v in strings if any(c.isalpha() for c in v) and not _is_number(v))
    return wordy * 2 > len(strings)


def guess_text_by_length(columns: Sequence[str], rows: Sequence[Mapping[str, Any]],
                         exclude: Sequence[str | None]) -> str | None:
    """The text-like column (:func:`text_like`) with the longest strings in the sample rows (for a
    text column with no usual name); None when no column reads as text."""
    best, best_length = None, 0.0
    for column in columns:
        if column in exclude:
            continue
        values = [row.get(column) for row in rows]
        if not text_like(values):
            continue
        strings = [v for v in values if isinstance(v, str)]
        length = sum(len(v) for v in strings) / len(values)
        if length > best_length:
            best, best_length = column, length
    return best


def text_columns(spec: str | Sequence[str] | None, columns: Sequence[str]) -> tuple[str, ...] | None:
    """A text-field option as column names: ``"a,b"`` is two columns unless one is named ``a,b``."""
    if spec is None:
        return None
    if isinstance(spec, str):
        if spec in columns or "," not in spec:
            return (spec,)
        return tuple(part.strip() for part in spec.split(",") if part.strip())
    return tuple(spec)


def resolve_document_fields(
    columns: Sequence[str],
    where: str,
    *,
    id_field: str | None = None,
    title_field: str | None = None,
    text_field: str | Sequence[str] | None = None,
    strict_columns: bool = True,
) -> DocumentFields:
    """The document columns: those given, the others guessed from ``columns``.

    Args:
        columns: The file's columns.
        where: The file, for errors.
        id_field, title_field, text_field: As given (None: guess). A title of "" means no title.
        strict_columns: The columns are the file's header or schema (CSV, TSV, Parquet): a given
            column missing from them is an error here. JSONL's columns are only its first records'
            keys: a missing column is an error of the first record that lacks it.

    Raises:
        SearchGradeError: No id or text column given or guessable, or (strict) a given one missing.
    """
    place = " in the header" if where.endswith(":1") else ""
    resolved_id = id_field if id_field is not None else guess(columns, "id")
    if resolved_id is None:
        raise problem(where, f"no document id column among {show_names(columns)}", column_fix("id"))
    texts = text_columns(text_field, columns)
    if texts is None:
        found = guess(columns, "text")
        if found is None:
            raise problem(where, f"no document text column among {show_names(columns)}", column_fix("text"))
        texts = (found,)
    if not texts:
        raise problem(where, "no text column given", column_fix("text"))
    if strict_columns:
        for role, column in (("id", resolved_id), *(("text", t) for t in texts)):
            if column not in columns:
                raise problem(where, f"no {column!r} column{place} (columns: {show_names(columns)})",
                              column_fix(role))
    title = title_field if title_field is not None else guess(columns, "title")
    return DocumentFields(resolved_id, title or None, texts)


def resolve_query_fields(columns: Sequence[str], where: str, *, id_field: str | None = None,
                         text_field: str | None = None, strict_columns: bool = True) -> QueryFields:
    """The query columns: those given, the others guessed (as :func:`resolve_document_fields`)."""
    resolved = {}
    for role, given in (("query_id", id_field), ("query_text", text_field)):
        column = given if given is not None else guess(columns, role)
        if role == "query_text" and given is None and column == resolved.get("query_id"):
            column = None
        if column is None:
            what = "query id" if role == "query_id" else "query text"
            raise problem(where, f"no {what} column among {show_names(columns)}", column_fix(role))
        if strict_columns and column not in columns:
            raise problem(where, f"no {column!r} column (columns: {show_names(columns)})", column_fix(role))
        resolved[role] = column
    return QueryFields(resolved["query_id"], resolved["query_text"])


def guessed_note(shown: Shown, fields: DocumentFields | QueryFields, given: Sequence[Any]) -> str | None:
    """A note saying which columns were guessed, or None: all given, or guessed as the BEIR names."""
    if isinstance(fields, DocumentFields):
        usual = fields.id == "_id" and fields.title in ("title", None) and fields.text == ("text",)
        parts = [f"id from {fields.id!r}", f"title from {fields.title!r}" if fields.title else "no title",
                 f"text from {' + '.join(repr(t) for t in fields.text)}"]
    else:
        usual = (fields.id, fields.text) == ("_id", "text")
        parts = [f"id from {fields.id!r}", f"text from {fields.text!r}"]
    if usual or all(value is not None for value in given):
        return None
    return f"{shown.short}: columns guessed: {', '.join(parts)}"
