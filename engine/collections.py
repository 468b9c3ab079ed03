"""Loading a collection (documents, and where present queries and qrels) from disk.

``load_collection`` accepts three shapes of input, chosen by what the path is:

- a BEIR-layout folder: ``corpus.jsonl``, optional ``queries.jsonl`` and judgments in ``qrels.tsv``
  (preferred) or ``qrels/test.tsv``;
- one file of documents: ``.jsonl``, ``.csv`` or ``.parquet``, with configurable field names;
- a folder of ``.txt`` / ``.md`` files, searched recursively (hidden files and folders are skipped).
  The id of a document is its path relative to the folder, with ``/`` separators. A ``.md`` file
  whose first non-blank line is a level-1 heading (``# Title``) gets that heading as its title and the
  rest as its text; any other file has an empty title and its whole (stripped) content as text.

Bad input raises ``SearchGradeError`` with one line naming the file and line (or row), what was
wrong and the fix. Recoverable oddities (empty documents, judgments naming unknown queries or
documents, queries with empty text) are skipped and reported in ``Collection.notes``.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.checks import UniqueIds
from core.records import Collection, Document, Query, SearchGradeError

DOCUMENT_SUFFIXES = (".jsonl", ".csv", ".parquet")
TEXT_SUFFIXES = (".txt", ".md")
QRELS_CANDIDATES = ("qrels.tsv", "qrels/test.tsv")
QRELS_HEADER = ("query-id", "corpus-id", "score")
#: How many ids or examples a note lists before "...".
_NOTE_EXAMPLES = 10

_SUPPORTED = (
    "a BEIR folder (corpus.jsonl, optional queries.jsonl and qrels.tsv), "
    "a .jsonl, .csv or .parquet file, or a folder of .txt/.md files"
)
_FIELD_OPTIONS = {"id": "--id-field", "title": "--title-field", "text": "--text-field"}


@dataclass(frozen=True)
class _Fields:
    id: str
    title: str
    text: str


def load_collection(
    path: str | Path,
    *,
    id_field: str = "_id",
    title_field: str = "title",
    text_field: str = "text",
    name: str | None = None,
) -> Collection:
    """Load documents, and queries and qrels where the layout has them.

    Args:
        path: A BEIR folder, a ``.jsonl``/``.csv``/``.parquet`` file or a folder of ``.txt``/``.md``
            files.
        id_field: The field holding the document id (BEIR corpus and single files).
        title_field: The field holding the title; optional, a missing one gives an empty title.
        text_field: The field holding the document text.
        name: The collection name; defaults to the folder name or the file stem.

    Returns:
        The collection. Document ids are strings (JSON integer ids are converted). Empty documents
        (empty title and text) are skipped and reported in ``notes``. When qrels are loaded, only
        the queries with at least one judgment are kept.

    Raises:
        SearchGradeError: The path is missing or unsupported, or a file is malformed.
    """
    root = Path(path).expanduser()
    fields = _Fields(id_field, title_field, text_field)
    if not root.exists():
        raise SearchGradeError(f"{root}: no such file or folder; point the path at {_SUPPORTED}")
    collection_name = name or (root.resolve().stem if root.is_file() else root.resolve().name)
    notes: list[str] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] | None = None
    if root.is_dir() and (root / "corpus.jsonl").is_file():
        corpus = root / "corpus.jsonl"
        documents, empty_doc_ids = _load_documents(_jsonl_records(corpus), corpus, fields, notes)
        queries, qrels = _load_beir_queries_and_qrels(root, documents, empty_doc_ids, notes)
    elif root.is_dir():
        documents = _load_text_folder(root, notes)
    elif root.suffix.lower() in DOCUMENT_SUFFIXES:
        records = _RECORD_READERS[root.suffix.lower()](root, fields)
        documents, _ = _load_documents(records, root, fields, notes)
    else:
        raise SearchGradeError(
            f"{root}: unsupported file type {root.suffix or '(no suffix)'!r}; point the path at {_SUPPORTED}"
        )
    return Collection(
        name=collection_name,
        path=str(root.resolve()),
        documents=documents,
        queries=queries,
        qrels=qrels,
        notes=notes,
    )


def grade_scale(qrels: dict[str, dict[str, int]]) -> tuple[int, int]:
    """The smallest and largest grade in the qrels, e.g. ``(1, 1)`` for scifact, ``(0, 4)`` for Cranfield.

    Raises:
        ValueError: The qrels hold no grade at all.
    """
    grades = [grade for docs in qrels.values() for grade in docs.values()]
    if not grades:
        raise ValueError("qrels hold no judgments, so they have no grade scale")
    return min(grades), max(grades)


def default_threshold(max_grade: int) -> int:
    """The relevance threshold (relevant = grade >= threshold) for a grade scale topping at max_grade.

    Binary labels (max 1) and 0-2 scales use 1: any positive label counts. Scales that reach 3 or
    more (the judge's 0-3 scale, Cranfield's 0-4) use 2, so "on the topic but no answer" (1) is not
    relevant, matching the judge's scale in PRODUCT.md.
    """
    return 2 if max_grade >= 3 else 1


# ---------------------------------------------------------------- reading files


def _decode(path: Path) -> str:
    """The file's text as UTF-8 (a leading BOM is dropped), or an error naming the bad line."""
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SearchGradeError(
            f"{path}:{line}: bytes {data[error.start : error.end]!r} are not valid UTF-8; "
            "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
        ) from None


def _jsonl_records(path: Path, _fields: _Fields | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(location, object)`` per non-blank line; location is ``file:line``."""
    # split("\n") rather than splitlines(): JSON strings may hold U+2028 and other line breaks.
    for number, line in enumerate(_decode(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise SearchGradeError(
                f"{path}:{number}: invalid JSON ({error.msg} at column {error.colno}); "
                "each line must be one JSON object"
            ) from None
        if not isinstance(record, dict):
            raise SearchGradeError(
                f"{path}:{number}: expected a JSON object, got {type(record).__name__}; "
                'each line must be one JSON object such as {"_id": ..., "text": ...}'
            )
        yield f"{path}:{number}", record


def _csv_records(path: Path, fields: _Fields) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(location, row)`` per CSV row; the header names the fields."""
    # The default limit (128 KiB) is below the size of a long document.
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    reader = csv.reader(io.StringIO(_decode(path), newline=""))
    try:
        header = next(reader, None)
        if header is None:
            return
        _require_columns(header, fields, f"{path}:1", " in the header")
        start = reader.line_num + 1
        for row in reader:
            location = f"{path}:{start}"
            start = reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise SearchGradeError(
                    f"{location}: row has {len(row)} cells but the header has {len(header)}; "
                    "quote cells that contain commas or line breaks"
                )
            yield location, dict(zip(header, row, strict=True))
    except csv.Error as error:
        raise SearchGradeError(
            f"{path}:{reader.line_num}: malformed CSV ({error}); fix the quoting"
        ) from None


def _require_columns(columns: Sequence[str], fields: _Fields, where: str, place: str = "") -> None:
    """The id and text columns must exist: else one line naming the column and the option to set."""
    for role in ("id", "text"):
        column = getattr(fields, role)
        if column not in columns:
            raise SearchGradeError(
                f"{where}: no {column!r} column{place} (columns: {_show_names(columns)}); "
                f"pass {_FIELD_OPTIONS[role]} with the column that holds the document {role}"
            )


def _parquet_records(path: Path, fields: _Fields) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(location, row)`` per Parquet row; location is ``file row N`` (1-based)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise SearchGradeError("pyarrow is not installed (pip install pyarrow)") from None
    try:
        table = pq.read_table(path)
    except Exception as error:  # pyarrow raises several types for a corrupt file
        raise SearchGradeError(f"{path}: not a readable Parquet file ({error}); re-export it") from None
    columns = table.column_names
    _require_columns(columns, fields, str(path))
    wanted = [c for c in (fields.id, fields.title, fields.text) if c in columns]
    for number, row in enumerate(table.select(wanted).to_pylist(), start=1):
        yield f"{path} row {number}", row


_RECORD_READERS = {".jsonl": _jsonl_records, ".csv": _csv_records, ".parquet": _parquet_records}


# ---------------------------------------------------------------- documents


def _load_documents(
    records: Iterator[tuple[str, dict[str, Any]]], path: Path, fields: _Fields, notes: list[str]
) -> tuple[list[Document], list[str]]:
    """The non-empty documents, and the ids of the empty ones (skipped, with a note)."""
    documents: list[Document] = []
    seen = UniqueIds("document", _where)
    empty_ids: list[str] = []
    saw_title = False
    for location, record in records:
        doc_id = _id_value(
            record,
            fields.id,
            location,
            "document",
            f"pass {_FIELD_OPTIONS['id']} with the field that holds the document id",
        )
        if fields.text not in record:
            raise SearchGradeError(
                f"{location}: no {fields.text!r} field (fields: {_show_names(record)}); "
                f"pass {_FIELD_OPTIONS['text']} with the field that holds the document text"
            )
        text = _text_value(record[fields.text], fields.text, location)
        saw_title = saw_title or fields.title in record
        title = _text_value(record.get(fields.title), fields.title, location)
        seen.add(doc_id, location)
        if not title.strip() and not text.strip():
            empty_ids.append(doc_id)
            continue
        documents.append(Document(doc_id, title, text))
    if not len(seen):
        raise SearchGradeError(
            f"{path}: no documents; add one record per document with {fields.id!r} and {fields.text!r}"
        )
    if not documents:
        raise SearchGradeError(
            f"{path}: all {len(empty_ids)} documents have an empty title and text; "
            f"check that {_FIELD_OPTIONS['text']} names the field that holds the text"
        )
    if empty_ids:
        notes.append(
            f"{path.name}: skipped {_plural(len(empty_ids), 'empty document')} (ids {_examples(empty_ids)})"
        )
    if not saw_title:
        notes.append(
            f"{path.name}: no {fields.title!r} field in any document, titles are empty "
            f"(set {_FIELD_OPTIONS['title']} to use one)"
        )
    return documents, empty_ids


def _load_text_folder(root: Path, notes: list[str]) -> list[Document]:
    documents: list[Document] = []
    empty_ids: list[str] = []
    ignored: list[str] = []
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = file.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if file.suffix.lower() not in TEXT_SUFFIXES:
            ignored.append(relative.as_posix())
            continue
        title, text = (
            _split_markdown_title(_decode(file))
            if file.suffix.lower() == ".md"
            else ("", _decode(file).strip())
        )
        if not title and not text:
            empty_ids.append(relative.as_posix())
            continue
        documents.append(Document(relative.as_posix(), title, text))
    if not documents and not empty_ids:
        raise SearchGradeError(
            f"{root}: folder has no corpus.jsonl and no .txt or .md files; point the path at {_SUPPORTED}"
        )
    if not documents:
        raise SearchGradeError(f"{root}: all {len(empty_ids)} .txt/.md files are empty; add text to them")
    if empty_ids:
        notes.append(f"{root.name}: skipped {_plural(len(empty_ids), 'empty file')} ({_examples(empty_ids)})")
    if ignored:
        notes.append(
            f"{root.name}: ignored {_plural(len(ignored), 'file')} not ending in .txt or .md "
            f"({_examples(ignored)})"
        )
    return documents


def _split_markdown_title(content: str) -> tuple[str, str]:
    """``("Title", rest)`` when the first non-blank line is ``# Title``, else ``("", content)``."""
    stripped = content.strip()
    first, _, rest = stripped.partition("\n")
    if first.startswith("# "):
        return first[2:].strip(), rest.strip()
    return "", stripped


# ---------------------------------------------------------------- queries and qrels


def _load_beir_queries_and_qrels(
    root: Path, documents: list[Document], empty_doc_ids: list[str], notes: list[str]
) -> tuple[list[Query], dict[str, dict[str, int]] | None]:
    queries_path = root / "queries.jsonl"
    qrels_path = next((root / c for c in QRELS_CANDIDATES if (root / c).is_file()), None)
    if qrels_path is None and (root / "qrels").is_dir():
        splits = sorted(p.name for p in (root / "qrels").glob("*.tsv"))
        notes.append(f"qrels/ has no test.tsv (found {', '.join(splits) or 'nothing'}); no judgments loaded")
    queries, empty_query_ids = _load_queries(queries_path, notes) if queries_path.is_file() else ([], [])
    if qrels_path is None:
        return queries, None
    if not queries_path.is_file():
        notes.append(f"{qrels_path.name} ignored: judgments need the query texts in queries.jsonl")
        return queries, None
    known = _Known(
        {q.query_id for q in queries}, set(empty_query_ids), {d.doc_id for d in documents}, set(empty_doc_ids)
    )
    qrels = _load_qrels(qrels_path, known, root, notes)
    judged = [q for q in queries if q.query_id in qrels]
    if len(judged) < len(queries):
        unjudged = [q.query_id for q in queries if q.query_id not in qrels]
        notes.append(
            f"queries.jsonl: kept the {len(judged)} queries with judgments, dropped "
            f"{_plural(len(unjudged), 'query', 'queries')} without any (ids {_examples(unjudged)})"
        )
    return judged, qrels or None


def _load_queries(path: Path, notes: list[str]) -> tuple[list[Query], list[str]]:
    """The queries with text, and the ids of those with empty text (skipped, with a note)."""
    queries: list[Query] = []
    seen = UniqueIds("query", _where)
    empty_ids: list[str] = []
    for location, record in _jsonl_records(path):
        query_id = _id_value(
            record, "_id", location, "query", 'each query line must be {"_id": ..., "text": ...}'
        )
        if "text" not in record:
            raise SearchGradeError(
                f"{location}: no 'text' field (fields: {_show_names(record)}); "
                'each query line must be {"_id": ..., "text": ...}'
            )
        text = _text_value(record["text"], "text", location)
        seen.add(query_id, location)
        if not text.strip():
            empty_ids.append(query_id)
            continue
        queries.append(Query(query_id, text, "qrels", None))
    if empty_ids:
        notes.append(
            f"{path.name}: skipped {_plural(len(empty_ids), 'query', 'queries')} with empty text "
            f"(ids {_examples(empty_ids)})"
        )
    return queries, empty_ids


@dataclass(frozen=True)
class _Known:
    """The ids a judgment may name, and those that were skipped as empty."""

    queries: set[str]
    empty_queries: set[str]
    docs: set[str]
    empty_docs: set[str]


def _load_qrels(path: Path, known: _Known, root: Path, notes: list[str]) -> dict[str, dict[str, int]]:
    """Judgments as query id -> document id -> grade, keeping only loaded queries and documents."""
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    reasons = {
        "empty_query": "naming queries skipped for empty text",
        "unknown_query": "naming queries not in queries.jsonl",
        "empty_doc": "naming documents skipped as empty",
        "unknown_doc": "naming documents not in the corpus",
        "repeated": "repeating an earlier identical judgment",
    }
    dropped: dict[str, list[str]] = {reason: [] for reason in reasons}
    shown = path.relative_to(root).as_posix()
    for number, line in enumerate(_decode(path).split("\n"), start=1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.rstrip("\r").split("\t")]
        if len(cells) != 3:
            raise SearchGradeError(
                f"{path}:{number}: expected 3 tab-separated columns (query-id, corpus-id, score), "
                f"found {len(cells)} in {_show(line)}; separate the columns with single tabs"
            )
        if number == 1 and not _is_number(cells[2]):
            # A header ("query-id corpus-id score"); any first line whose score is not a number counts.
            continue
        query_id, doc_id, score = cells
        grade = _grade(score)
        if grade is None:
            raise SearchGradeError(
                f"{path}:{number}: score {_show(score)} is not an integer grade; "
                "use whole numbers such as 0, 1, 2"
            )
        pair = (query_id, doc_id)
        if pair in seen:
            first_line, first_grade = seen[pair]
            if first_grade != grade:
                raise SearchGradeError(
                    f"{path}:{number}: query {query_id!r} and document {doc_id!r} are graded {grade} here "
                    f"but {first_grade} at line {first_line}; keep one judgment per pair"
                )
            dropped["repeated"].append(f"line {number}")
            continue
        seen[pair] = (number, grade)
        if query_id not in known.queries:
            reason = "empty_query" if query_id in known.empty_queries else "unknown_query"
            dropped[reason].append(f"line {number}: query {query_id!r}")
        elif doc_id not in known.docs:
            reason = "empty_doc" if doc_id in known.empty_docs else "unknown_doc"
            dropped[reason].append(f"line {number}: document {doc_id!r}")
        else:
            qrels.setdefault(query_id, {})[doc_id] = grade
    for reason, where in dropped.items():
        if where:
            notes.append(
                f"{shown}: dropped {_plural(len(where), 'judgment')} {reasons[reason]} (e.g. {where[0]})"
            )
    if not qrels:
        notes.append(f"{shown}: no judgment names a loaded query and document, so no judgments are used")
    return qrels


# ---------------------------------------------------------------- small helpers


def _id_value(record: dict[str, Any], field: str, location: str, kind: str, fix: str) -> str:
    """The record's id as a string (JSON integers are converted); ``fix`` ends the missing-field error."""
    value = record.get(field)
    if value is None:
        raise SearchGradeError(f"{location}: no {field!r} field (fields: {_show_names(record)}); {fix}")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise SearchGradeError(
            f"{location}: {kind} id {_show(value)} is not a string or integer; use string ids"
        )
    doc_id = str(value)
    if not doc_id.strip():
        raise SearchGradeError(f"{location}: {kind} id is empty; give every {kind} a non-empty id")
    return doc_id


def _text_value(value: Any, field: str, location: str) -> str:
    """A text field as a string: missing or null is empty, numbers are converted."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise SearchGradeError(
        f"{location}: field {field!r} holds {type(value).__name__} {_show(value)}; it must be a string"
    )


def _grade(score: str) -> int | None:
    try:
        return int(score)
    except ValueError:
        pass
    try:
        value = float(score)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _where(location: str) -> str:
    """``file:12`` -> ``line 12``; ``file row 3`` -> ``row 3``."""
    if " row " in location:
        return "row " + location.rpartition(" ")[2]
    return "line " + location.rpartition(":")[2]


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show_names(names: Any) -> str:
    listed = [repr(str(n)) for n in names]
    if not listed:
        return "none"
    return ", ".join(listed[:_NOTE_EXAMPLES]) + (", ..." if len(listed) > _NOTE_EXAMPLES else "")


def _examples(values: list[str]) -> str:
    shown = ", ".join(values[:_NOTE_EXAMPLES])
    return shown + (f", ... {len(values) - _NOTE_EXAMPLES} more" if len(values) > _NOTE_EXAMPLES else "")


def _plural(count: int, singular: str, plural: str | None = None) -> str:
    return f"{count} {singular if count == 1 else plural or singular + 's'}"
