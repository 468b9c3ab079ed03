"""A collection's labels out (TREC qrels or CSV) and in (TREC qrels, BEIR TSV or our CSV).

Export ``source``:

- ``human``: each rated pair's human grade (engine/labels/ratings.py: each rater's latest rating, lower
  median), keyed by the query id the rating was made under.
- ``llm``: the judge's grades from the collection's complete runs; where several runs graded a
  pair (query id, document), the newest run's grade.
- ``both``: human grades, and the judge's where no person rated the pair.

TREC qrels lines are ``query_id 0 doc_id grade``. The CSV has a header and a ``source`` column
(human / llm), with the query text, the raters or the judge's model and prompt version.

Import reads every line first and stores nothing unless all are valid (one transaction): TREC
qrels (4 whitespace-separated columns), BEIR TSV (``query-id corpus-id score``, tab-separated,
with or without its header) or a CSV with ``query_id``, ``doc_id`` and ``grade`` columns (optional
``query_text``, ``rater``, ``note``). Grades must be on the 0-3 scale. Imported labels carry no
document content hash, so they apply whatever the document's current text.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.labels.ratings import GRADES, human_grade, new_rating, rating_from_row

EXPORT_SOURCES = ("human", "llm", "both")
EXPORT_FORMATS = ("trec", "csv")
IMPORT_FORMATS = ("auto", "trec", "beir", "csv")
CSV_COLUMNS = ["query_id", "query_text", "doc_id", "grade", "source", "raters", "n_ratings", "model",
               "prompt_version", "run_id"]
#: Largest labels file read (bytes): a qrels file of millions of lines is still well under it.
MAX_IMPORT_BYTES = 512 * 1024 * 1024


def label_rows(store: Any, collection_name: str, source: str) -> list[dict[str, Any]]:
    """The collection's labels as export rows (CSV_COLUMNS), sorted by query id and document id."""
    if source not in EXPORT_SOURCES:
        raise SearchGradeError(f"--source {source!r} is not one of {', '.join(EXPORT_SOURCES)}")
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    if source in ("llm", "both"):
        for r in store.latest_llm_grades(collection_name):
            rows[(r["query_id"], r["doc_id"])] = {
                "query_id": r["query_id"], "query_text": r["text"], "doc_id": r["doc_id"],
                "grade": r["llm_grade"], "source": "llm", "raters": "", "n_ratings": 0,
                "model": r["model"] or "", "prompt_version": r["prompt_version"] or "", "run_id": r["run_id"]}
    if source in ("human", "both"):
        by_pair: dict[tuple[str, str], list] = {}
        for row in store.labels(collection_name):
            rating = rating_from_row(row)
            by_pair.setdefault((rating.query_id, rating.doc_id), []).append(rating)
        for pair, ratings in by_pair.items():
            text = next((r.query_text for r in reversed(ratings) if r.query_text), "")
            rows[pair] = {"query_id": pair[0], "query_text": text, "doc_id": pair[1],
                          "grade": human_grade(ratings), "source": "human",
                          "raters": ";".join(sorted({r.rater for r in ratings})), "n_ratings": len(ratings),
                          "model": "", "prompt_version": "", "run_id": ""}
    return [rows[key] for key in sorted(rows)]


def _write_atomic(path: Path, data: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise SearchGradeError(f"cannot write {path}: {exc.strerror}; pass a writable --out") from None


def format_labels(rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt not in EXPORT_FORMATS:
        raise SearchGradeError(f"--format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}")
    if fmt == "trec":
        return "".join(f"{r['query_id']} 0 {r['doc_id']} {r['grade']}\n" for r in rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def export_labels(store: Any, collection_name: str, source: str, fmt: str, out: str | Path) -> tuple[Path, int]:
    """Write a collection's labels to ``out``; returns the path and the number of pairs."""
    rows = label_rows(store, collection_name, source)
    if not rows:
        raise SearchGradeError(f"collection {collection_name!r} has no {source} labels to export"
                               + ("; rate results in the app or import qrels first" if source == "human"
                                  else "; list collections with `searchgrade labels list`"))
    path = Path(out)
    _write_atomic(path, format_labels(rows, fmt))
    return path, len(rows)


@dataclass
class ImportSummary:
    path: Path
    fmt: str
    labels: int
    pairs: int
    queries: int


def _grade(cell: str, where: str) -> int:
    try:
        value = float(cell)
    except ValueError:
        value = None
    if value is None or not value.is_integer() or int(value) not in GRADES:
        raise SearchGradeError(f"{where}: grade {cell!r} is not on the 0-3 scale; labels are 0, 1, 2 or 3 "
                               "(convert other scales before importing)")
    return int(value)


def _detect(path: Path, lines: list[str]) -> str:
    if path.suffix.lower() == ".csv":
        return "csv"
    first = next((line for line in lines if line.strip()), "")
    if "\t" in first and len(first.rstrip("\r").split("\t")) == 3:
        return "beir"
    return "trec"


def parse_labels(path: Path, text: str, fmt: str = "auto") -> list[tuple[str, str | None, str, int, str | None, str | None]]:
    """(query_id, query_text, doc_id, grade, rater, note) per line, or SearchGradeError naming the line."""
    lines = text.split("\n")
    fmt = _detect(path, lines) if fmt == "auto" else fmt
    out = []
    if fmt == "csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in ("query_id", "doc_id", "grade") if c not in (reader.fieldnames or [])]
        if missing:
            raise SearchGradeError(f"{path}:1: no {', '.join(missing)} column in the CSV header "
                                   f"({', '.join(reader.fieldnames or []) or 'empty'}); the header needs "
                                   "query_id, doc_id and grade")
        for number, row in enumerate(reader, start=2):
            where = f"{path}:{number}"
            qid, doc = (row.get("query_id") or "").strip(), (row.get("doc_id") or "").strip()
            if not qid or not doc:
                raise SearchGradeError(f"{where}: empty query_id or doc_id; every row names both")
            out.append((qid, (row.get("query_text") or "").strip() or None, doc,
                        _grade((row.get("grade") or "").strip(), where),
                        (row.get("rater") or "").strip() or None, (row.get("note") or "").strip() or None))
        return out
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        if fmt == "beir":
            cells = [c.strip() for c in line.rstrip("\r").split("\t")]
            if len(cells) != 3:
                raise SearchGradeError(f"{where}: expected 3 tab-separated columns (query-id, corpus-id, "
                                       f"score), found {len(cells)}")
            if number == 1 and not cells[2].lstrip("-").replace(".", "", 1).isdigit():
                continue  # the header
            qid, doc, grade = cells
        elif fmt == "trec":
            cells = line.split()
            if len(cells) != 4:
                raise SearchGradeError(f"{where}: expected 4 columns (query_id iteration doc_id grade), "
                                       f"found {len(cells)}; TREC qrels lines look like '1 0 doc7 2'")
            qid, _, doc, grade = cells
        else:
            raise SearchGradeError(f"--format {fmt!r} is not one of {', '.join(IMPORT_FORMATS)}")
        out.append((qid, None, doc, _grade(grade, where), None, None))
    return out


def import_labels(store: Any, path: str | Path, collection_name: str, *, rater: str | None = None,
                  fmt: str = "auto") -> ImportSummary:
    """Store the labels of a qrels or CSV file as ratings of a collection; all or nothing."""
    source = Path(path)
    if fmt not in IMPORT_FORMATS:
        raise SearchGradeError(f"--format {fmt!r} is not one of {', '.join(IMPORT_FORMATS)}")
    try:
        size = source.stat().st_size
        if size > MAX_IMPORT_BYTES:
            raise SearchGradeError(f"{source} is {size / 1e6:.0f} MB, over the {MAX_IMPORT_BYTES / 1e6:.0f} MB "
                                   "limit for a labels file; split it")
        text = source.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise SearchGradeError(f"cannot read {source}: {exc.strerror}; check the path") from None
    except UnicodeDecodeError:
        raise SearchGradeError(f"{source} is not UTF-8 text; save it as UTF-8") from None
    detected = _detect(source, text.split("\n")) if fmt == "auto" else fmt
    parsed = parse_labels(source, text, detected)
    if not parsed:
        raise SearchGradeError(f"{source} holds no labels; give one line per (query, document, grade)")
    default_rater = rater or f"import:{source.name}"
    rows = [new_rating(collection_name=collection_name, query_id=qid, query_text=text_, doc_id=doc,
                       content_hash=None, grade=grade, rater=row_rater or default_rater, note=note,
                       origin="import")
            for qid, text_, doc, grade, row_rater, note in parsed]
    store.add_labels(rows)
    return ImportSummary(source, detected, len(rows), len({(r[0], r[2]) for r in parsed}),
                         len({r[0] for r in parsed}))
