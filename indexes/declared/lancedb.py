"""A LanceDB table (embedded: a local folder, or a URI LanceDB opens) as a strategy, and loading one
of our collections into LanceDB (``searchgrade export-index ... --to lancedb``).

``search`` picks what LanceDB does:

- ``dense``: the query embedded with ``embedding_model`` (default: the run's, which is what
  export-index stored), nearest neighbours on ``vector_column`` by ``distance``. A table without a
  vector index (export-index makes none) is searched exactly; with one, ``nprobes`` and
  ``refine_factor`` tune it and ``exact = true`` bypasses it.
- ``fulltext``: LanceDB's own full-text index on ``text_column`` (BM25; export-index builds it).
- ``hybrid``: both, each to ``candidates`` rows, fused by LanceDB's RRF reranker (``rrf_k``).

An exported table has ``doc_id``, ``title``, ``text`` (title and text joined, as we index them, with
a full-text index) and ``embedding`` (our vectors), and its schema metadata (``EMBEDDED_BY``)
records the model and backend that embedded the documents: a dense or hybrid strategy whose queries
another model or backend would embed stops with one line.

Typed in the app (``spec.declared_in``), ``uri`` must be a folder inside the collections root: a
remote URI would be opened with the server's own cloud credentials.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchgrade.core.outbound import OutboundPolicy, OutboundRefused
from searchgrade.core.records import Collection, ScoredDoc, SearchGradeError, first_line
from searchgrade.indexes.base import FailedAttempt, Found
from searchgrade.indexes.declared.declaration import (
    Key,
    StrategySpec,
    check_columns,
    check_secret_free,
    embeddings_differ,
    outbound_policy,
    resolve_env,
)
from searchgrade.indexes.declared.node import DeclaredNode

SEARCHES = ("dense", "fulltext", "hybrid")
DISTANCES = ("cosine", "dot", "l2")
#: The schema metadata key in which export-index records what embedded the documents (JSON).
EMBEDDED_BY = "searchgrade.embedded_by"
STAGING_PREFIX = "searchgrade_staging_"
#: URI schemes LanceDB opens remotely (object stores, LanceDB Cloud).
REMOTE_SCHEMES = ("s3://", "s3+ddb://", "gs://", "az://", "abfs://", "db://", "http://", "https://")

KEYS: dict[str, Key] = {
    "uri": Key((str,), required=True, example='"./lancedb" (a folder) or "s3://bucket/lancedb"'),
    "table": Key((str,), required=True, example='"scifact"'),
    "search": Key((str,), "dense", example='"dense" (or "fulltext", "hybrid")'),
    "id_column": Key((str,), "doc_id", example='"doc_id"'),
    "vector_column": Key((str,), "embedding", example='"embedding"'),
    "text_column": Key((str,), "text", example='"text" (the column of the full-text index)'),
    "distance": Key((str,), "cosine", example='"cosine" (or "dot", "l2")'),
    "nprobes": Key((int,), None, example="20 (partitions an IVF index searches)"),
    "refine_factor": Key((int,), None, example="10"),
    "exact": Key((bool,), False, example="true (bypass a vector index: exact search)"),
    "embedding_model": Key((str,), None, example='"sentence-transformers/all-MiniLM-L6-v2"'),
    "candidates": Key((int,), 100, example="100 (rows of each list fused by hybrid)"),
    "rrf_k": Key((int,), 60, example="60"),
    "api_key": Key((str,), None, example='"env:LANCEDB_API_KEY" (LanceDB Cloud, db:// URIs)'),
}


def _lancedb() -> Any:
    try:
        import lancedb
    except ImportError as exc:
        raise SearchGradeError("lancedb is not installed (pip install lancedb)") from exc
    return lancedb


def is_remote(uri: str) -> bool:
    return uri.lower().startswith(REMOTE_SCHEMES)


def check(spec: StrategySpec) -> StrategySpec:
    o, where = spec.options, spec.where
    if o["search"] not in SEARCHES:
        raise SearchGradeError(f"{where}: search {o['search']!r} is not known: use one of {', '.join(SEARCHES)}")
    if o["distance"] not in DISTANCES:
        raise SearchGradeError(f"{where}: distance {o['distance']!r} is not known: use one of {', '.join(DISTANCES)}")
    if o.get("api_key") is not None:
        check_secret_free(where, "api_key", o["api_key"])
    for key in ("nprobes", "refine_factor", "candidates"):
        if o.get(key) is not None and o[key] < 1:
            raise SearchGradeError(f"{where}: {key} must be >= 1, got {o[key]!r}")
    if o["rrf_k"] < 0:
        raise SearchGradeError(f"{where}: rrf_k must be >= 0, got {o['rrf_k']!r}")
    return spec


def check_typed(spec: StrategySpec, policy: OutboundPolicy) -> str:
    """A declaration typed in the app: a folder inside the collections root (the path to open).

    Raises:
        OutboundRefused: a remote URI, an api_key, or a folder outside the root (one line).
    """
    o, where = spec.options, spec.where
    if is_remote(o["uri"]) or o.get("api_key"):
        raise OutboundRefused(f"{where}: uri {o['uri']!r}: a LanceDB typed in the app must be a folder "
                              "inside the collections root (a remote one would be opened with the server's "
                              "own credentials); declare remote tables in the strategies file")
    return str(policy.check_path(o["uri"], f"{where}: uri"))


def connect(uri: str, api_key: str | None = None, where: str = "lancedb") -> Any:
    lancedb = _lancedb()
    try:
        return lancedb.connect(uri, api_key=api_key) if api_key else lancedb.connect(uri)
    except Exception as exc:  # noqa: BLE001 - lancedb raises many kinds; the user gets one line
        raise SearchGradeError(f"{where}: cannot open LanceDB at {uri!r} ({first_line(exc)}): give a folder "
                               "or a URI LanceDB can open") from None


def _recorded(table: Any) -> Any:
    metadata = table.schema.metadata or {}
    raw = metadata.get(EMBEDDED_BY.encode())
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


class LanceNode(DeclaredNode):
    """A declared LanceDB strategy as an executor node."""

    def __init__(self, spec: StrategySpec, table: Any, embedder: Any | None, batch_size: int = 32) -> None:
        super().__init__(spec, embedder, batch_size)
        o = spec.options
        self.table = table
        self.table_name = o["table"]
        self.search = o["search"]
        self.id_column = o["id_column"]
        self.vector_column = o["vector_column"]
        self.text_column = o["text_column"]
        self.distance = o["distance"]
        self.nprobes = o.get("nprobes")
        self.refine_factor = o.get("refine_factor")
        self.exact = bool(o["exact"])
        self.candidates = int(o["candidates"])
        self.rrf_k = int(o["rrf_k"])

    def _tuned(self, query: Any) -> Any:
        query = query.distance_type(self.distance)
        if self.nprobes is not None:
            query = query.nprobes(self.nprobes)
        if self.refine_factor is not None:
            query = query.refine_factor(self.refine_factor)
        if self.exact:
            query = query.bypass_vector_index()
        return query

    def search_one(self, text: str, vector: Any, depth: int) -> Found:
        if self.search == "dense":
            query = self._tuned(self.table.search(vector, vector_column_name=self.vector_column, query_type="vector"))
            rows = query.limit(depth).select([self.id_column, "_distance"]).to_list()
            scores = [(1.0 - r["_distance"]) if self.distance == "cosine" else -r["_distance"] for r in rows]
        elif self.search == "fulltext":
            rows = (self.table.search(text, query_type="fts", fts_columns=self.text_column)
                    .limit(depth).select([self.id_column, "_score"]).to_list())
            scores = [r["_score"] for r in rows]
        else:
            from lancedb.rerankers import RRFReranker

            query = self.table.search(query_type="hybrid", vector_column_name=self.vector_column,
                                      fts_columns=self.text_column).vector(vector).text(text)
            # No select(): lancedb 0.40 pushes it into both sub-queries, whose scores it then lacks.
            found = self._tuned(query).rerank(RRFReranker(K=self.rrf_k)).limit(max(self.candidates, depth)).to_arrow()
            rows = found.select([self.id_column, "_relevance_score"]).slice(0, depth).to_pylist()
            scores = [r["_relevance_score"] for r in rows]
        return Found([ScoredDoc(str(r[self.id_column]), float(s), rank)
                      for rank, (r, s) in enumerate(zip(rows, scores, strict=True), start=1)])

    def explain(self, exc: Exception, attempt: int) -> FailedAttempt:  # noqa: ARG002 - never retried
        return FailedAttempt(f"LanceDB {self.search} search on {self.table_name!r} failed: {first_line(exc)}")


def build_node(spec: StrategySpec, ctx: Any) -> LanceNode:
    o, where = spec.options, spec.where
    policy = outbound_policy(spec)
    uri = check_typed(spec, policy) if policy is not None else o["uri"]
    api_key = resolve_env(o["api_key"], where, "api_key") if o.get("api_key") else None
    db = connect(uri, api_key, where)
    try:
        table = db.open_table(o["table"])
    except Exception:  # noqa: BLE001 - missing or unreadable: the fix is the same
        raise SearchGradeError(f"{where}: LanceDB at {o['uri']!r} has no table {o['table']!r}: load one with "
                               f"`searchgrade export-index COLLECTION --to lancedb --uri {o['uri']} --table "
                               f"{o['table']}`") from None
    columns = table.schema.names
    needed = ["id_column"] + (["vector_column"] if o["search"] in ("dense", "hybrid") else []) + (
        ["text_column"] if o["search"] in ("fulltext", "hybrid") else [])
    check_columns(where, f"LanceDB table {o['table']!r}", o, needed, columns)
    embedder = None
    if o["search"] in ("dense", "hybrid"):
        model = o.get("embedding_model") or ctx.settings.embedding_model
        embeddings_differ(where, f"LanceDB table {o['table']!r}", _recorded(table), model,
                          ctx.settings.embedding_backend,
                          f"searchgrade export-index COLLECTION --to lancedb --uri {o['uri']} --table {o['table']}")
        embedder = ctx.embedder(model)
    return LanceNode(spec, table, embedder, ctx.settings.batch_size)


# -- export-index --to lancedb ----------------------------------------------------------------------

def export_table(collection: Collection, vectors: Any, uri: str, name: str, *, replace: bool = False,
                 embedding: dict[str, str] | None = None,
                 progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Create LanceDB table ``name`` in folder ``uri`` from our documents and vectors, with a
    full-text index on the text (no vector index: searched exactly).

    The table is built and indexed under a staging name, then swapped in (its folder renamed into
    place, the old one's renamed aside and removed): a load that fails or is interrupted leaves the
    old table as it was and removes the staging one.

    Raises:
        SearchGradeError: a remote URI, the table exists (without replace), or the load fails.
    """
    import pyarrow as pa

    started = time.perf_counter()
    if is_remote(uri):
        raise SearchGradeError(f"--uri {uri!r}: export-index --to lancedb loads into a local folder (LanceDB "
                               "OSS cannot rename a remote table, so a load could not be swapped in whole)")
    if len(vectors) != len(collection.documents):
        raise ValueError(f"{len(vectors)} vectors for {len(collection.documents)} documents")
    folder = Path(uri).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    db = connect(str(folder), where="export-index --to lancedb")
    target, staged = folder / f"{name}.lance", folder / f"{STAGING_PREFIX}{name}.lance"
    if target.exists() and not replace:
        raise SearchGradeError(f"LanceDB at {uri!r} already has a table {name!r}: pass --replace to replace it "
                               "(loaded aside and swapped in when complete), or another --table")
    if staged.exists():  # left by a load that was killed
        shutil.rmtree(staged)
    dim = int(vectors.shape[1])
    metadata = {EMBEDDED_BY: json.dumps(embedding, sort_keys=True)} if embedding else {}
    schema = pa.schema([pa.field("doc_id", pa.string()), pa.field("title", pa.string()),
                        pa.field("text", pa.string()), pa.field("embedding", pa.list_(pa.float32(), dim))],
                       metadata=metadata)
    total = len(collection.documents)
    batch = 1000

    def batches() -> Any:
        for start in range(0, total, batch):
            docs = collection.documents[start:start + batch]
            flat = pa.array(vectors[start:start + batch].astype("float32").ravel())
            yield pa.record_batch([pa.array([d.doc_id for d in docs]), pa.array([d.title for d in docs]),
                                   pa.array([d.content for d in docs]),
                                   pa.FixedSizeListArray.from_arrays(flat, dim)], schema=schema)
            if progress is not None:
                progress("export", min(total, start + batch), total)

    try:
        table = db.create_table(STAGING_PREFIX + name, data=pa.RecordBatchReader.from_batches(schema, batches()),
                                schema=schema)
        from lancedb.index import FTS

        table.create_index("text", config=FTS())
        if target.exists():
            aside = folder / f"{STAGING_PREFIX}old_{name}.lance"
            if aside.exists():
                shutil.rmtree(aside)
            os.rename(target, aside)
            try:
                os.rename(staged, target)
            except BaseException:
                os.rename(aside, target)
                raise
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.rename(staged, target)
    except BaseException as exc:
        shutil.rmtree(staged, ignore_errors=True)
        if isinstance(exc, SearchGradeError) or not isinstance(exc, Exception):
            raise
        kept = f"; the existing {name!r} is unchanged" if target.exists() else ""
        raise SearchGradeError(f"LanceDB at {uri!r} failed while loading {name!r} ({first_line(exc)}): the "
                               f"partly loaded table was removed{kept}") from None
    return {"documents": total, "dim": dim, "seconds": time.perf_counter() - started, "table": name, "uri": uri}
