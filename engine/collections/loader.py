"""``load_collection``: documents, and queries and judgments where given, from what a path is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from searchgrade.core.records import Collection, Document, Query
from searchgrade.engine.collections.documents import load_documents
from searchgrade.engine.collections.fields import DocumentFields, guessed_note, resolve_document_fields
from searchgrade.engine.collections.problems import QRELS_FILE, QUERIES_FILE, Shown, examples, plural, problem
from searchgrade.engine.collections.qrels import Known, load_qrels
from searchgrade.engine.collections.queries import load_queries
from searchgrade.engine.collections.readers import RECORD_SUFFIXES, open_records
from searchgrade.engine.collections.textfolder import FolderLimits, check_inside, load_text_folder

QRELS_CANDIDATES = ("qrels.tsv", "qrels/test.tsv")
SUPPORTED = ("a BEIR folder (corpus.jsonl, optional queries.jsonl and qrels.tsv), a .jsonl, .csv, "
             ".tsv or .parquet file, or a folder of .txt/.md files")


def load_collection(
    path: str | Path,
    *,
    id_field: str | None = None,
    title_field: str | None = None,
    text_field: str | Sequence[str] | None = None,
    queries_file: str | Path | None = None,
    qrels_file: str | Path | None = None,
    query_id_field: str | None = None,
    query_text_field: str | None = None,
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    root: str | Path | None = None,
    limits: FolderLimits | Mapping[str, int] | None = None,
) -> Collection:
    """Load documents, and queries and judgments where the layout has them or they are given.

    Args:
        path: A BEIR folder, a ``.jsonl``/``.csv``/``.tsv``/``.parquet`` file or a folder of
            ``.txt``/``.md`` files.
        id_field, title_field, text_field: The document columns (BEIR corpus and single files);
            None guesses each from the columns (engine/collections/fields.py). ``text_field`` may
            name several columns (``"a,b"`` or a list), joined. A title of ``""`` means none.
        queries_file: Queries (JSONL/CSV/TSV/Parquet) beside the corpus; for a BEIR folder, used
            instead of its queries.jsonl.
        qrels_file: Judgments (BEIR TSV or TREC) beside the corpus; for a BEIR folder, used instead
            of its qrels.tsv. They need queries.
        query_id_field, query_text_field: The query columns; None guesses them.
        name: The collection name; defaults to the folder name or the file stem.
        labels: How messages name the files the user gave ("corpus", "queries", "qrels"): the names
            of uploaded files; by default, the paths as given.
        root: Read only files that resolve inside this folder (an exposed app's collections folder;
            symlinks out of it are refused).
        limits: Limits of a folder walk (default ``FolderLimits()``), or its fields as a dict
            (as ``fields`` records limits other than the default).

    Returns:
        The collection; ``fields`` holds these options as resolved (columns guessed, file paths
        absolute), so a run stores them and a resume loads the same way. Document ids are strings.
        Empty documents are skipped and noted. With judgments, only judged queries are kept.

    Raises:
        SearchGradeError: The path is missing or unsupported, or a file is malformed; the message
            is one line, with a second phrasing for the app (``page_message``).
    """
    labels = dict(labels or {})
    corpus = Shown.given(path, labels.get("corpus"))
    confine = Path(root).expanduser() if root is not None else None
    if not corpus.path.exists():
        raise problem(corpus.label, "no such file or folder", f"point the path at {SUPPORTED}")
    check_inside(corpus, corpus.path, confine)
    limits = FolderLimits(**limits) if isinstance(limits, Mapping) else (limits or FolderLimits())
    notes: list[str] = []
    options: dict[str, Any] = {}
    empty_doc_ids: list[str] = []
    queries_shown = _given(queries_file, labels.get("queries"))
    qrels_shown = _given(qrels_file, labels.get("qrels"))
    if corpus.path.is_dir() and (corpus.path / "corpus.jsonl").is_file():
        corpus_file = corpus.member(corpus.path / "corpus.jsonl")
        check_inside(corpus_file, corpus_file.path, confine)
        documents, empty_doc_ids, fields = _documents(corpus_file, notes, id_field, title_field, text_field)
        options.update(fields.as_options())
        queries_shown, qrels_shown = _beir_extras(corpus, queries_shown, qrels_shown, confine, notes)
    elif corpus.path.is_dir():
        documents = load_text_folder(corpus, notes, limits, confine)
        if limits != FolderLimits():  # a resume, or a Ray worker, walks the folder with them too
            options["limits"] = {"max_files": limits.max_files, "max_bytes": limits.max_bytes}
    elif corpus.path.suffix.lower() in RECORD_SUFFIXES:
        documents, empty_doc_ids, fields = _documents(corpus, notes, id_field, title_field, text_field)
        options.update(fields.as_options())
    else:
        raise problem(corpus.label, f"unsupported file type {corpus.path.suffix or '(no suffix)'!r}",
                      f"point the path at {SUPPORTED}")
    pooled: dict[str, set[str]] = {}
    queries, qrels = _queries_and_qrels(queries_shown, qrels_shown, documents, empty_doc_ids, notes,
                                        query_id_field, query_text_field, options,
                                        explicit=(queries_file is not None, qrels_file is not None),
                                        pooled=pooled)
    if labels:
        options["labels"] = labels
    resolved = corpus.path.resolve()
    return Collection(
        name=name or (resolved.stem if resolved.is_file() else resolved.name),
        path=str(resolved),
        documents=documents,
        queries=queries,
        qrels=qrels,
        notes=notes,
        fields=options,
        pooled_unjudged=pooled if qrels else {},
    )


def _given(path: str | Path | None, label: str | None) -> Shown | None:
    if path is None:
        return None
    shown = Shown.given(path, label)
    if not shown.path.is_file():
        raise problem(shown.label, "no such file", "check the path of the file")
    return shown


def _documents(shown: Shown, notes: list[str], id_field: str | None, title_field: str | None,
               text_field: str | Sequence[str] | None) -> tuple[list[Document], list[str], DocumentFields]:
    records = open_records(shown)
    if not records.columns:
        raise problem(shown.label, "no documents", "add one record per document with an id and a text")
    where = shown.line(1) if records.kind in (".csv", ".tsv") else shown.label
    fields = resolve_document_fields(records.columns, where, id_field=id_field, title_field=title_field,
                                     text_field=text_field, strict_columns=records.kind != ".jsonl")
    wanted = [fields.id, *fields.text, *([fields.title] if fields.title else [])]
    documents, empty_ids = load_documents(records.read(wanted), fields, shown, notes)
    note = guessed_note(shown, fields, (id_field, title_field, text_field))
    if note:
        notes.append(note)
    return documents, empty_ids, fields


def _beir_extras(folder: Shown, queries: Shown | None, qrels: Shown | None, confine: Path | None,
                 notes: list[str]) -> tuple[Shown | None, Shown | None]:
    """A BEIR folder's queries.jsonl and qrels, unless files given replace them."""
    if queries is None and (folder.path / "queries.jsonl").is_file():
        queries = folder.member(folder.path / "queries.jsonl")
        check_inside(queries, queries.path, confine)
    if qrels is None:
        found = next((folder.path / c for c in QRELS_CANDIDATES if (folder.path / c).is_file()), None)
        if found is not None:
            qrels = folder.member(found)
            check_inside(qrels, qrels.path, confine)
        elif (folder.path / "qrels").is_dir():
            splits = sorted(p.name for p in (folder.path / "qrels").glob("*.tsv"))
            notes.append(f"qrels/ has no test.tsv (found {', '.join(splits) or 'nothing'}); no judgments loaded")
    return queries, qrels


def _queries_and_qrels(
    queries_shown: Shown | None,
    qrels_shown: Shown | None,
    documents: list[Document],
    empty_doc_ids: list[str],
    notes: list[str],
    query_id_field: str | None,
    query_text_field: str | None,
    options: dict[str, Any],
    explicit: tuple[bool, bool],
    pooled: dict[str, set[str]] | None = None,
) -> tuple[list[Query], dict[str, dict[str, int]] | None]:
    queries: list[Query] = []
    empty_query_ids: list[str] = []
    if queries_shown is not None:
        queries, empty_query_ids, query_fields = load_queries(
            queries_shown, notes, id_field=query_id_field, text_field=query_text_field)
        if explicit[0]:
            if not queries and not empty_query_ids:
                raise problem(queries_shown.label, "no queries", "add one record per query with an id and a text")
            options["queries_file"] = str(queries_shown.path.resolve())
        options.update(query_fields.as_options())
    if qrels_shown is None:
        return queries, None
    if queries_shown is None:
        if explicit[1]:
            raise problem(qrels_shown.label, "judgments need the queries' texts",
                          (f"pass {QUERIES_FILE.flag} FILE with the queries",
                           f"add the queries as '{QUERIES_FILE.picker}'"))
        notes.append(f"{qrels_shown.short} ignored: judgments need the query texts in queries.jsonl")
        return queries, None
    if explicit[1]:
        options["qrels_file"] = str(qrels_shown.path.resolve())
    known = Known({q.query_id for q in queries}, set(empty_query_ids), {d.doc_id for d in documents},
                  set(empty_doc_ids))
    qrels = load_qrels(qrels_shown, known, notes, queries_shown.short, pooled)
    judged = [q for q in queries if q.query_id in qrels]
    if qrels and len(judged) < len(queries):
        unjudged = [q.query_id for q in queries if q.query_id not in qrels]
        notes.append(f"{queries_shown.short}: kept the {len(judged)} queries with judgments, dropped "
                     f"{plural(len(unjudged), 'query', 'queries')} without any (ids {examples(unjudged)})")
    return (judged if qrels else queries), qrels or None


__all__ = ["QRELS_CANDIDATES", "QRELS_FILE", "QUERIES_FILE", "SUPPORTED", "load_collection"]
