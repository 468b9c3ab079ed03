"""Queries from a file: BEIR's queries.jsonl, or any JSONL, CSV, TSV or Parquet file with an id and a
text column (given, or guessed as for documents). A TSV or CSV file whose first line names no usual
column (``qid``, ``query``, ...) has no header: its first column is the id, its second the text
(as MS MARCO's queries.tsv)."""

from __future__ import annotations

from searchgrade.core.checks import UniqueIds
from searchgrade.core.records import Query
from searchgrade.engine.collections.documents import id_value, text_value
from searchgrade.engine.collections.fields import GUESSES, QueryFields, guessed_note, resolve_query_fields
from searchgrade.engine.collections.problems import (
    Shown,
    column_fix,
    examples,
    plural,
    problem,
    show_names,
    where_short,
)
from searchgrade.engine.collections.readers import open_records

#: The names that make a CSV/TSV queries file's first line a header.
HEADER_NAMES = frozenset(GUESSES["query_id"] + GUESSES["query_text"])


def load_queries(shown: Shown, notes: list[str], *, id_field: str | None = None,
                 text_field: str | None = None) -> tuple[list[Query], list[str], QueryFields]:
    """The queries with text, the ids of those with empty text (skipped, with a note), the columns.

    Raises:
        SearchGradeError: A bad record (missing or repeated id, missing text column, a value that
            is not text), or no id or text column given or guessable.
    """
    records = open_records(shown, header_names=HEADER_NAMES)
    if not records.columns:  # an empty file: no queries (a BEIR folder of an LLM-only collection)
        return [], [], QueryFields(id_field or "_id", text_field or "text")
    if not records.header:
        fields = QueryFields(id_field or "column 1", text_field or "column 2")
        notes.append(f"{shown.short}: no header line: the first column is the query id, the second its text")
    else:
        fields = resolve_query_fields(records.columns, shown.label, id_field=id_field, text_field=text_field,
                                      strict_columns=records.kind != ".jsonl")
        note = guessed_note(shown, fields, (id_field, text_field))
        if note:
            notes.append(note)
    queries: list[Query] = []
    seen = UniqueIds("query", where_short)
    empty_ids: list[str] = []
    for location, record in records.read([fields.id, fields.text]):
        query_id = id_value(record, fields.id, location, "query", "query_id")
        if fields.text not in record:
            raise problem(location, f"no {fields.text!r} field (fields: {show_names(record)})",
                          column_fix("query_text"))
        text = text_value(record[fields.text], fields.text, location, "query_text")
        seen.add(query_id, location)
        if not text.strip():
            empty_ids.append(query_id)
            continue
        queries.append(Query(query_id, text, "qrels", None))
    if empty_ids:
        notes.append(f"{shown.short}: skipped {plural(len(empty_ids), 'query', 'queries')} with empty "
                     f"text (ids {examples(empty_ids)})")
    return queries, empty_ids, fields
