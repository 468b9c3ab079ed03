"""What a file would give before it is loaded: its columns, its first rows, the columns guessed for
each role, and the counts loading would give with a mapping (for the app's column mapping)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchgrade.engine.collections.documents import DocumentCounts, count_documents
from searchgrade.engine.collections.fields import DocumentFields, guess, guess_text_by_length, text_like
from searchgrade.engine.collections.problems import Shown, problem, show_names
from searchgrade.engine.collections.queries import HEADER_NAMES
from searchgrade.engine.collections.readers import open_records

#: Rows shown, and the longest cell text shown.
PREVIEW_ROWS = 5
PREVIEW_CHARS = 160
#: Rows the text guess looks at when no column has a usual name.
_SAMPLE_ROWS = 50


@dataclass(frozen=True)
class FilePreview:
    """A file's columns, its first rows (cells as short text) and the guessed mapping.

    ``guess`` maps a role ("id", "title", "text" or "query_id", "query_text") to a column or None.
    """

    columns: list[str]
    rows: list[dict[str, str]]
    guess: dict[str, Any]
    header: bool = True


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def preview_documents(shown: Shown) -> FilePreview:
    """Columns, first rows and guessed id / title / text columns of a single-file corpus.

    Raises:
        SearchGradeError: The file cannot be read (its first lines are malformed, say).
    """
    records = open_records(shown)
    sample = records.head(_SAMPLE_ROWS)
    doc_id = guess(records.columns, "id")
    title = guess(records.columns, "title")
    text = guess(records.columns, "text") or guess_text_by_length(records.columns, sample, (doc_id, title))
    if text is None and not any(text_like([r.get(c) for r in sample]) for c in records.columns if c != doc_id):
        raise problem(shown.short, f"no column holds text (columns: {show_names(records.columns)})",
                      "a corpus needs a column of document text, such as 'text' or 'body': add one to the file")
    return FilePreview(records.columns, [{c: _cell(r.get(c)) for c in records.columns} for r in sample[:PREVIEW_ROWS]],
                       {"id": doc_id, "title": title, "text": [text] if text else []})


def preview_queries(shown: Shown) -> FilePreview:
    """Columns, first rows and guessed id / text columns of a queries file (header optional)."""
    records = open_records(shown, header_names=HEADER_NAMES)
    sample = records.head(PREVIEW_ROWS)
    if not records.header:
        found = {"query_id": records.columns[0], "query_text": records.columns[min(1, len(records.columns) - 1)]}
    else:
        query_id = guess(records.columns, "query_id")
        text = guess(records.columns, "query_text")
        found = {"query_id": query_id, "query_text": text if text != query_id else None}
    return FilePreview(records.columns, [{c: _cell(r.get(c)) for c in records.columns} for r in sample],
                       found, header=records.header)


def numeric_text_columns(shown: Shown, fields: DocumentFields) -> list[str]:
    """The text columns picked whose sample values are not text (numbers, say)."""
    records = open_records(shown)
    sample = records.head(_SAMPLE_ROWS)
    return [c for c in fields.text if c in records.columns and not text_like([r.get(c) for r in sample])]


def count_with(shown: Shown, fields: DocumentFields) -> DocumentCounts:
    """What loading the file with these columns would give (one pass over the columns it needs)."""
    records = open_records(shown)
    wanted = [fields.id, *fields.text, *([fields.title] if fields.title else [])]
    return count_documents(records.read(wanted), fields)
