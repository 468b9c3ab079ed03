"""The Evaluate page's collection section: the source (demo, path, upload), the column mapping of a
single-file corpus, and the queries and judgments beside it. Widgets only; the decisions are in
viewmodels/collection_form.py."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.paths import DEMO_DIR, collections_root
from searchgrade.server.uploads import MB, SavedUpload, UploadLimits, save_upload
from searchgrade.viewmodels import collection_form as form
from searchgrade.viewmodels import evaluate as evaluate_model
from searchgrade.views._common import app_exposed, get_store, home, public


def show_error(exc: SearchGradeError) -> None:
    """A loader or run error as the page phrases it (the picker to change), with no server path."""
    st.error(public(exc.page_message))


def _mtime(path: str | Path) -> float:
    try:
        return Path(path).stat().st_mtime
    except OSError:
        return 0.0


@st.cache_data(show_spinner="Reading the file…", max_entries=16)
def _document_preview(path: str, label: str, mtime: float):
    return form.document_preview(path, label)


@st.cache_data(show_spinner=False, max_entries=16)
def _query_preview(path: str, label: str, mtime: float):
    return form.query_preview(path, label)


@st.cache_data(show_spinner="Counting the documents…", max_entries=32)
def _counts(path: str, label: str, mapping: form.ColumnMap, mtime: float) -> form.Counts:
    return form.mapping_counts(path, label, mapping)


@st.cache_data(show_spinner="Loading the collection…", max_entries=16)
def _overview(key: tuple, mtime: float, _choice: form.Choice) -> evaluate_model.CollectionOverview:
    return evaluate_model.collection_overview(_choice.path, **_choice.options)


def collection_overview(choice: form.Choice) -> evaluate_model.CollectionOverview:
    """What the collection offers (loaded once per choice; raises SearchGradeError)."""
    return _overview(choice.key(), _mtime(choice.path), choice)


def _upload(kind: str, label: str, types: list[str] | None, key: str, help_text: str) -> SavedUpload | None:
    """An uploader whose file is saved (streamed) once, under the app's upload limit."""
    limit_mb = int(st.get_option("server.maxUploadSize"))
    upload = st.file_uploader(label, type=types, key=key, help=help_text)
    if upload is None:
        return None
    marker = (kind, upload.name, upload.size, getattr(upload, "file_id", ""))
    saved = st.session_state.setdefault("evaluate_saved_uploads", {})
    if marker not in saved:
        try:
            saved[marker] = save_upload(upload.name, upload, home(), kind=kind,
                                        limits=UploadLimits(max_bytes=limit_mb * MB))
        except SearchGradeError as exc:
            saved[marker] = exc
    result = saved[marker]
    if isinstance(result, SearchGradeError):
        show_error(result)
        return None
    return result


def _column_mapping(path: Path, label: str, collection: Path) -> form.ColumnMap | None:
    """The preview, the pickers and the counts of the documents file ``path`` (the collection itself,
    or a BEIR folder's corpus.jsonl); None while the mapping cannot load."""
    try:
        preview = _document_preview(str(path), label, _mtime(path))
    except SearchGradeError as exc:
        show_error(exc)
        return None
    with st.container(border=True):
        st.markdown("**Columns**: which column holds what")
        st.dataframe(pd.DataFrame(preview.rows, columns=preview.columns), hide_index=True)
        # Again after a run: Streamlit drops the state of widgets a run did not draw (the form is
        # hidden while a run goes on), and then the mapping that run stored comes back.
        if st.session_state.get("evaluate_map_for") != str(path) or "evaluate_map_id" not in st.session_state:
            stored = form.stored_mappings(get_store(), collection, collection.stem)
            initial = form.initial_mapping(preview, stored)
            st.session_state["evaluate_map_id"] = initial.id
            st.session_state["evaluate_map_title"] = initial.title
            st.session_state["evaluate_map_text"] = list(initial.text)
            st.session_state["evaluate_map_for"] = str(path)
        for key, allowed in (("evaluate_map_id", preview.columns), ("evaluate_map_title", [None, *preview.columns])):
            if st.session_state.get(key) not in allowed:
                st.session_state[key] = None
        st.session_state["evaluate_map_text"] = [c for c in st.session_state.get("evaluate_map_text", [])
                                                 if c in preview.columns]
        one, two, three = st.columns(3)
        doc_id = one.selectbox(form.PICKERS["id"], preview.columns, key="evaluate_map_id",
                               placeholder="Pick the id column")
        title = two.selectbox(form.PICKERS["title"], [None, *preview.columns], key="evaluate_map_title",
                              format_func=lambda c: "(no title)" if c is None else c)
        text = three.multiselect(form.PICKERS["text"], preview.columns, key="evaluate_map_text",
                                 help="Several columns are joined, in the order picked")
        mapping = form.ColumnMap(doc_id, title, tuple(text))
        counts = _counts(str(path), label, mapping, _mtime(path)) if mapping.fields() else \
            form.mapping_counts(path, label, mapping)
        if counts.text:
            st.caption(public(counts.text))
        if counts.problem:
            st.error(public(counts.problem))
            return None
    return mapping


def _queries_and_judgments(folder_has: tuple[bool, bool] | None = None) -> dict | None:
    """Uploads of a queries file (with its id and text columns) and a judgments file; None while the
    queries' mapping cannot load.

    ``folder_has``: for a BEIR folder, whether it has queries and judgments of its own (the uploads
    replace them; with both, they wait in a collapsed expander).
    """
    options: dict = {}
    if folder_has is None:
        title, box = ("**Queries and judgments** (optional: with both, the human-judgments mode works)",
                      st.container(border=True))
    elif all(folder_has):
        title, box = ("Upload other queries or judgments to use instead of the folder's own.",
                      st.expander("Other queries or judgments", expanded=False))
    else:
        title, box = ("**Queries and judgments** (optional: instead of, or beside, the folder's own "
                      f"queries.jsonl{'' if folder_has[0] else ' (missing)'} and "
                      f"qrels.tsv{'' if folder_has[1] else ' (missing)'}; with both, the human-judgments "
                      "mode works)", st.container(border=True))
    with box:
        st.markdown(title)
        one, two = st.columns(2)
        with one:
            queries = _upload("queries", form.QUERIES_UPLOADER, ["jsonl", "csv", "tsv", "parquet"],
                              "evaluate_queries_upload",
                              "One query per line or row, with an id and a text column (JSONL, CSV, TSV; "
                              "a TSV without a header is id, text)")
        with two:
            qrels = _upload("qrels", form.QRELS_UPLOADER, None, "evaluate_qrels_upload",
                            "TREC qrels (query-id 0 doc-id grade) or a BEIR TSV (query-id, corpus-id, score)")
        if queries is not None:
            try:
                preview = _query_preview(str(queries.path), queries.name, 0.0)
            except SearchGradeError as exc:
                show_error(exc)
                return None
            st.dataframe(pd.DataFrame(preview.rows, columns=preview.columns), hide_index=True)
            if st.session_state.get("evaluate_qmap_for") != str(queries.path) or \
                    "evaluate_qmap_id" not in st.session_state:
                stored = form.stored_mappings(get_store(), queries.path, "")
                st.session_state["evaluate_qmap_id"], st.session_state["evaluate_qmap_text"] = \
                    form.initial_query_mapping(preview, stored, str(queries.path.resolve()))
                st.session_state["evaluate_qmap_for"] = str(queries.path)
            left, right = st.columns(2)
            query_id = left.selectbox(form.PICKERS["query_id"], preview.columns, key="evaluate_qmap_id")
            query_text = right.selectbox(form.PICKERS["query_text"], preview.columns, key="evaluate_qmap_text")
            if not query_id or not query_text:
                st.error(public(f"pick the columns as '{form.PICKERS['query_id']}' and "
                                f"'{form.PICKERS['query_text']}'"))
                return None
            options["queries"] = (str(queries.path), queries.name, query_id, query_text)
        if qrels is not None:
            options["qrels"] = (str(qrels.path), qrels.name)
        elif queries is not None and not (folder_has and folder_has[1]):
            st.caption("Queries without judgments are not graded by themselves: add a judgments file to "
                       "evaluate them with human judgments (the LLM mode writes its own queries).")
    return options


def choose_collection() -> form.Choice | None:
    """The collection section of the Evaluate page; the choice, or None while it is incomplete."""
    source = st.radio("Collection", form.SOURCES, key="evaluate_source", horizontal=True)
    root = collections_root()
    if source == form.SOURCES[0]:
        return form.Choice(str(DEMO_DIR), "demo", {"labels": {"corpus": "demo"}})
    if source == form.SOURCES[1]:
        policy = form.path_policy(app_exposed(), root)
        if not policy.allowed:
            st.info(public(policy.message))
            return None
        if policy.message:
            st.caption(public(policy.message))
        typed = st.text_input("Path", key="evaluate_path", placeholder="/data/my-beir-folder",
                              help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels.tsv), a .jsonl, .csv, "
                              ".tsv or .parquet file, or a folder of .txt/.md files").strip()
        if not typed:
            return None
        try:
            path = form.resolve_typed_path(typed, policy)
        except SearchGradeError as exc:
            show_error(exc)
            return None
        label = typed
    else:
        limit_mb = int(st.get_option("server.maxUploadSize"))
        saved = _upload("corpus", "A .jsonl, .csv, .tsv or .parquet file, or a .zip of a BEIR folder",
                        ["jsonl", "csv", "tsv", "parquet", "zip"], "evaluate_upload",
                        "Column names are guessed and can be changed below")
        st.caption(f"Files up to {limit_mb:,} MB (the app's limit, set by `searchgrade app --max-upload-mb`); "
                   "for bigger collections use a path on this machine or the command line.")
        if saved is None:
            return None
        path, label = saved.path, saved.name
    policy_root = root if source == form.SOURCES[1] else None
    if not path.exists():
        return form.Choice(str(path), label, form.load_options(label, None, root=policy_root))
    kind = form.source_kind(path)
    mapping = None
    if kind in ("file", "beir"):
        documents, documents_label = (path, label) if kind == "file" else form.beir_corpus(path, label)
        mapping = _column_mapping(documents, documents_label, path)
        if mapping is None:
            return None
    extras = _queries_and_judgments(form.beir_has(path) if kind == "beir" else None)
    if extras is None:
        return None
    return form.Choice(str(path), label, form.load_options(label, mapping, root=policy_root, **extras))
