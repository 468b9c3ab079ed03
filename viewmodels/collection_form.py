"""The Evaluate screen's collection section: where a collection comes from, how its columns map,
which queries and judgments go beside it, and messages that name no server path.

- Sources: the bundled demo, a path on the server (refused on an exposed app unless the operator
  gave ``--collections-root``, and then only inside it), or an upload (server/uploads.py).
- A single-file corpus (and a BEIR folder's corpus.jsonl) gets a column mapping: its first rows, its
  columns, pickers pre-filled by the mapping a run of the same collection stored (else by a guess),
  and the counts loading would give.
- Any collection but the demo takes a queries file (mapped the same way) and a judgments file, so
  qrels mode works for it; a BEIR folder's own queries.jsonl and qrels.tsv are used unless replaced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import (
    KNOBS,
    QRELS_CANDIDATES,
    QRELS_FILE,
    QUERIES_FILE,
    DocumentFields,
    Shown,
)
from searchgrade.engine.collections.preview import (
    FilePreview,
    count_with,
    numeric_text_columns,
    preview_documents,
    preview_queries,
)
from searchgrade.engine.collections.problems import plural
from searchgrade.engine.store import Store

#: The pickers' labels (the loader's app-phrased errors name the same ones).
PICKERS = {role: knob.picker for role, knob in KNOBS.items()}
QUERIES_UPLOADER = QUERIES_FILE.picker
QRELS_UPLOADER = QRELS_FILE.picker
SOURCES = ("The bundled demo (SciFact)", "A path on this machine", "Upload a file")


def source_kind(path: str | Path) -> str:
    """"beir" (a folder with corpus.jsonl), "folder" (of text files) or "file" (a single-file corpus)."""
    location = Path(path)
    if location.is_dir():
        return "beir" if (location / "corpus.jsonl").is_file() else "folder"
    return "file"


def beir_corpus(folder: str | Path, label: str) -> tuple[Path, str]:
    """A BEIR folder's documents file and how messages name it (as the loader does)."""
    return Path(folder) / "corpus.jsonl", f"{label}/corpus.jsonl"


def beir_has(folder: str | Path) -> tuple[bool, bool]:
    """Whether a BEIR folder has queries (queries.jsonl) and judgments (qrels.tsv or qrels/test.tsv)."""
    location = Path(folder)
    return ((location / "queries.jsonl").is_file(),
            any((location / name).is_file() for name in QRELS_CANDIDATES))


# ---------------------------------------------------------------- paths on the server


@dataclass(frozen=True)
class PathPolicy:
    """Whether the app reads collections by path, and where.

    Attributes:
        allowed: False on an exposed app without a collections root.
        root: Paths must resolve inside this folder (None: anywhere).
        message: What the page says about it.
    """

    allowed: bool
    root: Path | None
    message: str


def path_policy(exposed: bool, root: str | Path | None) -> PathPolicy:
    if root is not None:
        return PathPolicy(True, Path(root), "Paths are read inside the collections folder the app was "
                          "started with (relative to it); links out of it are refused.")
    if exposed:
        return PathPolicy(False, None, "Reading collections by path is off: this app is reachable from "
                          "other machines. Upload a file, or restart the app with --collections-root DIR "
                          "to allow paths inside DIR.")
    return PathPolicy(True, None, "")


def resolve_typed_path(text: str, policy: PathPolicy) -> Path:
    """The path a user typed, checked against the policy (relative paths are inside the root).

    Raises:
        SearchGradeError: Paths are off, or the path leaves the root; named as typed.
    """
    if not policy.allowed:
        raise SearchGradeError(f"{text}: {policy.message}")
    typed = Path(text).expanduser()
    if policy.root is None:
        return typed
    location = typed if typed.is_absolute() else policy.root / typed
    if not location.resolve().is_relative_to(policy.root.resolve()):
        raise SearchGradeError(f"{text}: outside the collections folder; type a path inside it "
                               "(relative to it), without links out of it")
    return location


# ---------------------------------------------------------------- column mapping


@dataclass(frozen=True)
class ColumnMap:
    """The pickers' values: document id, title (None: none) and text columns."""

    id: str | None
    title: str | None
    text: tuple[str, ...]

    def fields(self) -> DocumentFields | None:
        return DocumentFields(self.id, self.title, self.text) if self.id and self.text else None


def document_preview(path: str | Path, label: str) -> FilePreview:
    return preview_documents(Shown.given(path, label))


def query_preview(path: str | Path, label: str) -> FilePreview:
    return preview_queries(Shown.given(path, label))


def initial_mapping(preview: FilePreview, stored: Sequence[Mapping[str, Any]]) -> ColumnMap:
    """The pickers' first values: the mapping a run of this collection stored, if its columns are all
    there (newest first); else the guess."""
    for fields in stored:
        text = fields.get("text_field")
        texts = tuple([text] if isinstance(text, str) else text or ())
        wanted = [fields.get("id_field"), *texts]
        title = fields.get("title_field") or None
        if all(c in preview.columns for c in wanted) and (title is None or title in preview.columns):
            return ColumnMap(fields["id_field"], title, texts)
    return ColumnMap(preview.guess["id"], preview.guess["title"], tuple(preview.guess["text"]))


def initial_query_mapping(preview: FilePreview, stored: Sequence[Mapping[str, Any]],
                          queries_path: str) -> tuple[str | None, str | None]:
    for fields in stored:
        if fields.get("queries_file") == queries_path:
            pair = (fields.get("query_id_field"), fields.get("query_text_field"))
            if all(c in preview.columns for c in pair):
                return pair
    return preview.guess["query_id"], preview.guess["query_text"]


def stored_mappings(store: Store, path: str | Path, name: str) -> list[dict[str, Any]]:
    """How earlier runs of this collection (this file first, then its name) mapped its columns."""
    return store.collection_fields(str(Path(path).resolve()), name)


@dataclass(frozen=True)
class Counts:
    """What loading would give, in words, and the problem that stops it (app-phrased), if any."""

    text: str
    problem: str | None = None


def mapping_counts(path: str | Path, label: str, mapping: ColumnMap) -> Counts:
    """Documents, empty ones and repeated ids with this mapping; or what is missing or wrong."""
    fields = mapping.fields()
    if fields is None:
        missing = PICKERS["id"] if not mapping.id else PICKERS["text"]
        return Counts("", f"pick a column as '{missing}'")
    if fields.id in fields.text:
        return Counts("", f"the id column {fields.id!r} is also a text column; pick another as "
                      f"'{PICKERS['id']}' or '{PICKERS['text']}'")
    not_text = numeric_text_columns(Shown.given(path, label), fields)
    if not_text:
        names = ", ".join(repr(c) for c in not_text)
        return Counts("", f"{label}: {names} {'holds' if len(not_text) == 1 else 'hold'} no text (numbers or "
                      f"empty values); pick the column of document text as '{PICKERS['text']}'")
    counts = count_with(Shown.given(path, label), fields)
    repeated = (f"{plural(counts.duplicate_ids, 'id')} "
                f"{'appears' if counts.duplicate_ids == 1 else 'appear'} more than once")
    text = (f"Loading gives {plural(counts.documents, 'document')}"
            + (f"; {plural(counts.empty, 'empty one')} skipped" if counts.empty else "")
            + (f"; {repeated}" if counts.duplicate_ids else ""))
    if counts.error is not None:
        return Counts(text, counts.error.page_message)
    if counts.duplicate_ids:
        examples = ", ".join(repr(d) for d in counts.duplicate_examples)
        return Counts(text, f"{label}: {repeated} (e.g. {examples}), so loading would stop; pick a column "
                      f"with one id per row as '{PICKERS['id']}'")
    if not counts.documents:
        return Counts(text, f"{label}: every document is empty with this mapping; pick the column that "
                      f"holds the text as '{PICKERS['text']}'")
    return Counts(text)


# ---------------------------------------------------------------- what to load


@dataclass
class Choice:
    """The collection the section settled on: what ``load_collection`` is called with.

    Attributes:
        path: The corpus on the server.
        label: How the user named it (what they typed, or the uploaded file's name).
        options: load_collection's keyword arguments (columns, queries and qrels files, labels, root).
    """

    path: str
    label: str
    options: dict[str, Any] = field(default_factory=dict)

    def key(self) -> tuple:
        """A hashable key of the choice (for caches)."""
        return (self.path, self.label, repr(sorted(self.options.items())))


def load_options(label: str, mapping: ColumnMap | None, *, root: Path | None = None,
                 queries: tuple[str, str, str | None, str | None] | None = None,
                 qrels: tuple[str, str] | None = None) -> dict[str, Any]:
    """load_collection keywords for a choice.

    Args:
        label: The corpus as the user named it.
        mapping: The column mapping of a single-file corpus (None: the loader guesses).
        root: The collections folder paths must stay inside.
        queries: (path, name, id column, text column) of an uploaded queries file.
        qrels: (path, name) of an uploaded judgments file.
    """
    options: dict[str, Any] = {"labels": {"corpus": label}}
    if mapping is not None and mapping.fields() is not None:
        options.update(mapping.fields().as_options())
    if root is not None:
        options["root"] = str(root)
    if queries is not None:
        path, name, query_id, query_text = queries
        options.update(queries_file=path, query_id_field=query_id, query_text_field=query_text)
        options["labels"]["queries"] = name
    if qrels is not None:
        options["qrels_file"], options["labels"]["qrels"] = qrels
    return options


# ---------------------------------------------------------------- no server paths on a page


def without_server_paths(text: str, data_dir: str | Path, root: Path | None = None) -> str:
    """A message as a user may read it (a page, an agent): the data folder, the bundled demo and
    the collections root by name, never their paths on the server."""
    from searchgrade.engine.paths import DEMO_DIR

    folders = {str(data_dir): "the data folder", str(Path(data_dir).resolve()): "the data folder",
               str(DEMO_DIR): "demo"}
    if root is not None:
        folders[str(root)] = ""
        folders[str(root.resolve())] = ""
    return hide_server_paths(text, folders)


def hide_server_paths(text: str, replacements: Mapping[str, str]) -> str:
    """The text with server folders replaced (longest first): ``{"/srv/data/uploads/ab12/": ""}``.

    An upload's folder ``<data>/uploads/<hash>/`` always goes, leaving the file's own name.
    """
    for folder, replacement in sorted(replacements.items(), key=lambda kv: -len(kv[0])):
        if not folder:
            continue
        base = folder.rstrip("/")
        text = re.sub(re.escape(base) + r"/uploads/[0-9a-f]{16}/", "", text)
        text = text.replace(base + "/", replacement + ("/" if replacement else "")).replace(base, replacement or ".")
    return text
