"""A Milvus collection as a strategy (pymilvus: a Milvus Lite file or a server URL, one client),
and loading one of our collections into Milvus (``searchgrade export-index ... --to milvus``).

``search`` picks what Milvus does:

- ``dense``: the query embedded with ``embedding_model`` (default: the run's, which is what
  export-index stored), nearest neighbours on ``vector_field``.
- ``bm25``: Milvus's own full-text search, its BM25 function over ``text_field`` (the query text
  goes to Milvus as it is; Milvus analyses and scores it).
- ``hybrid``: both, each to ``candidates`` results, fused by Milvus's RRF ranker (``rrf_k``).

Scores are the distances Milvus returns (ranks are its order). The queries of a chunk are embedded
in one batch (each query's latency is its share of the batch plus its own search round trip).

An exported collection has ``doc_id`` (primary key), ``title``, ``text`` (title and text joined,
as we index them, analysed for BM25), ``embedding`` (our vectors, exact FLAT index, inner product
on unit vectors = cosine, as our ``flat`` ANN) and ``sparse`` (made by Milvus's BM25 function,
with our k1 and b). A collection property (``EMBEDDED_BY``) records what embedded the documents
(model and backend): a dense or hybrid strategy whose queries another model or backend would embed
stops with one line instead of searching int8 document vectors with fp32 queries (or worse). (A
property, not the schema's description, which Milvus Lite does not keep.)

Typed in the app (``spec.declared_in``), a Milvus Lite file must lie in the collections root and a
server URL's host passes core/outbound.py's policy (resolved when the strategy is built; a plain
``http`` URL is then opened at the checked address), and ``token`` may only be a secret the
operator bound to that host.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from searchgrade.core.outbound import OutboundPolicy
from searchgrade.core.records import Collection, ScoredDoc, SearchGradeError, first_line
from searchgrade.indexes.base import FailedAttempt, Found
from searchgrade.indexes.declared.declaration import (
    Key,
    StrategySpec,
    check_secret_free,
    check_typed_secret,
    embeddings_differ,
    outbound_policy,
    resolve_env,
)
from searchgrade.indexes.declared.node import DeclaredNode

SEARCHES = ("dense", "bm25", "hybrid")
#: Longest VARCHAR Milvus stores, in bytes: longer texts are cut (export-index says how many).
MAX_VARCHAR_BYTES = 65_535
MAX_ID_BYTES = 512
#: Rows per insert call.
INSERT_BATCH = 500
#: The collection property in which export-index records what embedded the documents (JSON).
EMBEDDED_BY = "searchgrade.embedded_by"

KEYS: dict[str, Key] = {
    "uri": Key((str,), required=True, example='"./milvus.db" (a Milvus Lite file) or "http://127.0.0.1:19530"'),
    "collection": Key((str,), required=True, example='"scifact"'),
    "search": Key((str,), "dense", example='"dense" (or "bm25", "hybrid")'),
    "token": Key((str,), None, example='"env:MILVUS_TOKEN"'),
    "db_name": Key((str,), None, example='"default"'),
    "id_field": Key((str,), "doc_id", example='"doc_id"'),
    "vector_field": Key((str,), "embedding", example='"embedding"'),
    "sparse_field": Key((str,), "sparse", example='"sparse"'),
    "metric": Key((str,), "IP", example='"IP" (or "COSINE", "L2": the dense index\'s metric)'),
    "embedding_model": Key((str,), None, example='"sentence-transformers/all-MiniLM-L6-v2"'),
    "params": Key((dict,), None, example="{ ef = 64 } (search parameters of the dense index)"),
    "candidates": Key((int,), 100, example="100 (results of each list fused by hybrid)"),
    "rrf_k": Key((int,), 60, example="60"),
    "timeout_s": Key((float,), 30.0, example="30"),
}


def _pymilvus() -> Any:
    try:
        import pymilvus
    except ImportError as exc:
        raise SearchGradeError("pymilvus is not installed (pip install pymilvus milvus-lite)") from exc
    return pymilvus


def check(spec: StrategySpec) -> StrategySpec:
    o, where = spec.options, spec.where
    if o["search"] not in SEARCHES:
        raise SearchGradeError(f"{where}: search {o['search']!r} is not known: use one of {', '.join(SEARCHES)}")
    if o.get("token") is not None:
        check_secret_free(where, "token", o["token"])
    if o["candidates"] < 1 or o["rrf_k"] < 0 or o["timeout_s"] <= 0:
        raise SearchGradeError(f"{where}: candidates must be >= 1, rrf_k >= 0 and timeout_s > 0")
    if o["metric"].upper() not in ("IP", "COSINE", "L2"):
        raise SearchGradeError(f"{where}: metric {o['metric']!r} is not known: use IP, COSINE or L2")
    return spec


def _is_url(uri: str) -> bool:
    return "://" in uri


def check_typed(spec: StrategySpec, policy: OutboundPolicy) -> str:
    """A declaration typed in the app: a file inside the collections root, or a server whose host
    the policy accepts, and a token bound to that host. Returns the uri to open (a plain http URL
    at its checked address).

    Raises:
        OutboundRefused: one line naming the key and the fix.
    """
    import urllib.parse

    o, where = spec.options, spec.where
    uri = o["uri"]
    if not _is_url(uri):
        path = policy.check_path(uri, f"{where}: uri")
        if o.get("token"):
            check_typed_secret(policy, where, "token", o["token"], str(path))
        return str(path)
    parts = urllib.parse.urlsplit(uri)
    addresses = policy.check_url(uri, f"{where}: uri")
    if o.get("token"):
        check_typed_secret(policy, where, "token", o["token"], parts.hostname or "")
    if parts.scheme != "http" or not policy.guard_addresses:
        return uri
    address = addresses[0]
    netloc = (f"[{address}]" if ":" in address else address) + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


#: One client per (uri, token, database) in a process: a Milvus Lite file is served by one embedded
#: server, which several strategies (dense, bm25, hybrid on one collection) share.
_CLIENTS: dict[tuple[str, str | None, str | None], Any] = {}
_CLIENTS_LOCK = threading.Lock()
CONNECT_ATTEMPTS = 3


def connect(uri: str, token: str | None = None, db_name: str | None = None,
            where: str = "milvus") -> Any:
    """The process's MilvusClient for a Milvus Lite file or a server URL (made once).

    Raises:
        SearchGradeError: it cannot connect (one line with the fix).
    """
    pymilvus = _pymilvus()
    key = (uri, token, db_name)
    with _CLIENTS_LOCK:
        if key in _CLIENTS:
            return _CLIENTS[key]
        kwargs: dict[str, Any] = {}
        if token:
            kwargs["token"] = token
        if db_name:
            kwargs["db_name"] = db_name
        for attempt in range(1, CONNECT_ATTEMPTS + 1):
            try:
                client = pymilvus.MilvusClient(uri, **kwargs)
                break
            except Exception as exc:  # noqa: BLE001 - pymilvus raises many kinds; the user gets one line
                if attempt < CONNECT_ATTEMPTS:
                    time.sleep(1.0)  # an embedded server still starting or stopping
                    continue
                first = first_line(exc)
                raise SearchGradeError(f"{where}: cannot open Milvus at {uri!r} ({first}): give a Milvus "
                                       "Lite file path (milvus-lite installed) or a reachable server "
                                       "URL") from None
        _CLIENTS[key] = client
        return client


class MilvusNode(DeclaredNode):
    """A declared Milvus strategy as an executor node."""

    def __init__(self, spec: StrategySpec, client: Any, embedder: Any | None, batch_size: int = 32) -> None:
        super().__init__(spec, embedder, batch_size)
        o = spec.options
        self.client = client
        self.collection = o["collection"]
        self.search = o["search"]
        self.id_field = o["id_field"]
        self.vector_field = o["vector_field"]
        self.sparse_field = o["sparse_field"]
        self.metric = o["metric"].upper()
        self.params = dict(o.get("params") or {})
        self.candidates = int(o["candidates"])
        self.rrf_k = int(o["rrf_k"])
        self.timeout_s = float(o["timeout_s"])

    def _dense(self, vector: Any, limit: int) -> dict[str, Any]:
        return {"data": [vector.tolist()], "anns_field": self.vector_field, "limit": limit,
                "param": {"metric_type": self.metric, "params": self.params}}

    def _bm25(self, text: str, limit: int) -> dict[str, Any]:
        return {"data": [text], "anns_field": self.sparse_field, "limit": limit,
                "param": {"metric_type": "BM25"}}

    def search_one(self, text: str, vector: Any, depth: int) -> Found:
        if self.search == "hybrid":
            pymilvus = _pymilvus()
            limit = max(self.candidates, depth)
            reqs = [pymilvus.AnnSearchRequest(**self._dense(vector, limit)),
                    pymilvus.AnnSearchRequest(**self._bm25(text, limit))]
            result = self.client.hybrid_search(self.collection, reqs=reqs, ranker=pymilvus.RRFRanker(self.rrf_k),
                                               limit=depth, output_fields=[self.id_field],
                                               timeout=self.timeout_s)
        else:
            request = self._dense(vector, depth) if self.search == "dense" else self._bm25(text, depth)
            result = self.client.search(self.collection, data=request["data"], anns_field=request["anns_field"],
                                        limit=depth, search_params=request["param"],
                                        output_fields=[self.id_field], timeout=self.timeout_s)
        docs = []
        for rank, hit in enumerate(result[0], start=1):
            doc_id = hit.get(self.id_field)
            if doc_id is None:
                doc_id = (hit.get("entity") or {}).get(self.id_field, hit.get("id"))
            docs.append(ScoredDoc(str(doc_id), float(hit.get("distance", 0.0)), rank))
        return Found(docs)

    def explain(self, exc: Exception, attempt: int) -> FailedAttempt:  # noqa: ARG002 - never retried
        return FailedAttempt(f"Milvus {self.search} search on {self.collection!r} failed: {first_line(exc)}")


def build_node(spec: StrategySpec, ctx: Any) -> MilvusNode:
    o, where = spec.options, spec.where
    policy = outbound_policy(spec)
    uri = check_typed(spec, policy) if policy is not None else o["uri"]
    token = resolve_env(o.get("token"), where, "token") if o.get("token") else None
    client = connect(uri, token, o.get("db_name"), where)
    try:
        exists = client.has_collection(o["collection"])
    except Exception as exc:  # noqa: BLE001
        raise SearchGradeError(f"{where}: cannot reach Milvus at {o['uri']!r} ({exc}): check uri") from None
    if not exists:
        raise SearchGradeError(f"{where}: Milvus at {o['uri']!r} has no collection {o['collection']!r}: "
                               f"load one with `searchgrade export-index COLLECTION --to milvus --uri "
                               f"{o['uri']} --collection {o['collection']}`")
    try:
        client.load_collection(o["collection"])
    except Exception as exc:  # noqa: BLE001
        raise SearchGradeError(f"{where}: Milvus cannot load collection {o['collection']!r} ({exc})") from None
    embedder = None
    if o["search"] in ("dense", "hybrid"):
        model = o.get("embedding_model") or ctx.settings.embedding_model
        check_embedded_by(client, spec, model, ctx.settings.embedding_backend)
        embedder = ctx.embedder(model)
    return MilvusNode(spec, client, embedder, ctx.settings.batch_size)


def check_embedded_by(client: Any, spec: StrategySpec, model: str, backend: str) -> None:
    """Raises SearchGradeError when the collection records other embeddings than the queries'
    would be. A collection made elsewhere (or by an earlier export-index) records none: unchecked.
    """
    o, where = spec.options, spec.where
    try:
        properties = client.describe_collection(o["collection"]).get("properties") or {}
    except Exception as exc:  # noqa: BLE001
        raise SearchGradeError(f"{where}: Milvus cannot describe collection {o['collection']!r} ({exc})") from None
    try:
        recorded = json.loads(properties.get(EMBEDDED_BY) or "null")
    except ValueError:
        recorded = None
    embeddings_differ(where, f"Milvus collection {o['collection']!r}", recorded, model, backend,
                      f"searchgrade export-index COLLECTION --to milvus --uri {o['uri']} --collection "
                      f"{o['collection']}")


def _cut(text: str, limit: int) -> tuple[str, bool]:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore"), True


#: A replacement is loaded under this prefix + the name, and renamed once complete.
STAGING_PREFIX = "searchgrade_staging_"


def _swap_in(client: Any, staged: str, name: str) -> None:
    """Replace collection ``name`` by the fully loaded ``staged`` one: the old one is renamed
    aside, the new one renamed into place, and only then is the old one dropped."""
    aside = STAGING_PREFIX + "old_" + name
    if client.has_collection(aside):
        client.drop_collection(aside)
    client.rename_collection(name, aside)
    try:
        client.rename_collection(staged, name)
    except BaseException:
        client.rename_collection(aside, name)  # the old one back in place
        client.load_collection(name)
        raise
    client.load_collection(name)  # a renamed collection comes back released (Milvus Lite)
    try:
        client.drop_collection(aside)
    except Exception:  # noqa: BLE001, S110 - the new one is in place; the next replace drops it
        pass


def export_collection(collection: Collection, vectors: Any, uri: str, name: str, *,
                      k1: float = 1.5, b: float = 0.75, replace: bool = False, token: str | None = None,
                      progress: Callable[[str, int, int], None] | None = None,
                      embedding: dict[str, str] | None = None) -> dict[str, Any]:
    """Create Milvus collection ``name`` from our documents and vectors, with a BM25 function.

    Args:
        collection: the documents (ids must fit Milvus's 512-byte VARCHAR key).
        vectors: one unit vector per document, in document order (our embeddings).
        embedding: what embedded them (``embedded_by``), recorded as a collection property so
            that a strategy embedding its queries otherwise is refused (None: nothing recorded).
        uri: a Milvus Lite file or a server URL.
        name: the Milvus collection to create.
        k1, b: BM25 parameters of the sparse index.
        replace: replace an existing collection of that name (otherwise it is an error). The new
            one is loaded under a staging name first and swapped in only when complete, so a
            failed load leaves the old collection as it was.

    Returns:
        What was done: documents inserted, texts cut to Milvus's VARCHAR limit, dimension, seconds.

    Raises:
        SearchGradeError: the collection exists (without replace), an id is too long, or Milvus fails.
    """
    _pymilvus()  # the install hint when pymilvus is missing
    from pymilvus import DataType, Function, FunctionType

    started = time.perf_counter()
    where = f"export-index --to milvus --uri {uri}"
    too_long = next((d.doc_id for d in collection.documents if len(d.doc_id.encode()) > MAX_ID_BYTES), None)
    if too_long is not None:
        raise SearchGradeError(f"document id {too_long[:60]!r}... is longer than Milvus's {MAX_ID_BYTES}-byte "
                               "primary key: shorten the ids")
    if len(vectors) != len(collection.documents):
        raise ValueError(f"{len(vectors)} vectors for {len(collection.documents)} documents")
    client = connect(uri, token, None, where)
    created = False
    load_as = name
    try:
        if client.has_collection(name):
            if not replace:
                raise SearchGradeError(f"Milvus at {uri!r} already has a collection {name!r}: pass "
                                       "--replace to overwrite it, or another --collection")
            load_as = STAGING_PREFIX + name
            if client.has_collection(load_as):  # left by a load that was killed
                client.drop_collection(load_as)
        dim = int(vectors.shape[1])
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("doc_id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_BYTES)
        schema.add_field("title", DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
        schema.add_field("text", DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES, enable_analyzer=True)
        schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(Function(name="text_bm25", function_type=FunctionType.BM25,
                                     input_field_names=["text"], output_field_names=["sparse"]))
        index = client.prepare_index_params()
        index.add_index(field_name="embedding", index_type="FLAT", metric_type="IP")
        index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                        params={"bm25_k1": k1, "bm25_b": b})
        properties = {EMBEDDED_BY: json.dumps(embedding, sort_keys=True)} if embedding else None
        client.create_collection(load_as, schema=schema, index_params=index, properties=properties)
        created = True
        cut = 0
        total = len(collection.documents)
        for start in range(0, total, INSERT_BATCH):
            rows = []
            for doc, vector in zip(collection.documents[start:start + INSERT_BATCH],
                                   vectors[start:start + INSERT_BATCH], strict=True):
                title, t1 = _cut(doc.title, MAX_VARCHAR_BYTES)
                text, t2 = _cut(doc.content, MAX_VARCHAR_BYTES)
                cut += int(t1 or t2)
                rows.append({"doc_id": doc.doc_id, "title": title, "text": text,
                             "embedding": [float(x) for x in vector]})
            client.insert(load_as, rows)
            if progress is not None:
                progress("export", min(total, start + INSERT_BATCH), total)
        client.flush(load_as)
        client.load_collection(load_as)
        if load_as != name:
            _swap_in(client, load_as, name)
    except BaseException as exc:
        if created:  # nothing half-loaded is left behind (Ctrl-C included)
            try:
                client.drop_collection(load_as)
            except Exception:  # noqa: BLE001, S110 - the first error is the one to report
                pass
        if isinstance(exc, SearchGradeError) or not isinstance(exc, Exception):
            raise
        first = first_line(exc)
        kept = f"; the existing {name!r} is unchanged" if load_as != name else ""
        raise SearchGradeError(f"Milvus at {uri!r} failed while loading {name!r} ({first}): the "
                               f"partly loaded collection was dropped{kept}") from None
    return {"documents": total, "cut": cut, "dim": dim, "seconds": time.perf_counter() - started,
            "collection": name, "uri": uri}

