"""A PostgreSQL table (pgvector for dense search, full-text search for keywords) as a strategy.

Either a preset over a table with id, text and vector columns (``table`` and ``search``):

- ``dense``: the query embedded with ``embedding_model`` (default: the run's, which is what
  export-index stored), nearest neighbours by the ``distance`` operator (``<=>`` cosine, ``<#>``
  inner product, ``<->`` L2). An HNSW scan returns at most ``hnsw.ef_search`` rows, so it is set to
  the depth asked when that is deeper than ``ef_search`` (default 100, ``DEFAULT_EF_SEARCH``);
  ``probes`` sets ``ivfflat.probes``, and
  ``exact = true`` turns index scans off (an exact scan).
- ``fulltext``: ``rank`` (``ts_rank``, or ``ts_rank_cd``) over the ``tsv_column`` (a ``tsvector``)
  with its ``normalization`` bits, the query parsed with the table's text search configuration; by
  default any of its words may match (``tsquery = "or"``), as BM25 scores a document with any of
  them; ``"and"`` or ``"websearch"`` take Postgres's own. The default, ``ts_rank`` with
  normalization 1 (divided by 1 + the log of the document's length), measured on the SciFact demo:
  nDCG@10 0.604, against 0.329 for ``ts_rank_cd`` without normalization (bench/RESULTS.md).
- ``hybrid``: both, each to ``candidates`` rows, fused by reciprocal rank fusion (``rrf_k``) in SQL.

or the user's own SQL (``sql``) with bound parameters ``:query`` (the text), ``:query_vector``
(the embedded query, a pgvector literal) and ``:k`` (the depth): they become psycopg placeholders,
never text in the statement (``translate_sql``). The first column of its rows is the document id; a
``score`` column, if any, the score (else 1/rank); ``title`` / ``text`` columns describe documents
the collection lacks.

A connection pool (psycopg_pool) holds at most ``concurrency`` connections; every query runs in its
own transaction with ``statement_timeout`` set to ``timeout_s``. A statement timeout, a dropped
connection (retried ``retries`` times on a fresh connection), or any other error fails that query
for this strategy, recorded as for every backend.

A table made by ``export-index --to postgres`` (``export_table``) records in its comment what
embedded its vectors and its text search configuration: a dense or hybrid strategy whose queries
another model or backend would embed stops with one line.

The password of a DSN is only ``env:NAME``. Typed in the app (``spec.declared_in``), a DSN may name
one host (checked by core/outbound.py's policy and connected to at the checked address, libpq's
``hostaddr``) or a socket folder inside the collections root, and libpq reads none of the server's
credentials: not ``PGPASSWORD``, ``.pgpass``, a service file's password, client certificates or
Kerberos tickets.

The folder holds one job a module: the user's SQL and the presets' statements (``sql.py``), the
connection and its security (``connection.py``), the node and how a declaration becomes one
(``node.py``), and ``export-index --to postgres`` (``export.py``); this module is the kind's keys
and checks, what indexes/declared/kinds.py registers.
"""

from __future__ import annotations

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared.declaration import Key, StrategySpec
from searchgrade.indexes.declared.postgres.connection import check_typed, conninfo, parse_dsn
from searchgrade.indexes.declared.postgres.export import EMBEDDED_BY, STAGING_PREFIX, export_table
from searchgrade.indexes.declared.postgres.node import DEFAULT_EF_SEARCH, PostgresNode, build_node
from searchgrade.indexes.declared.postgres.sql import DISTANCES, RANKS, TSQUERIES, split_table, translate_sql

__all__ = ["DEFAULT_EF_SEARCH", "EMBEDDED_BY", "KEYS", "STAGING_PREFIX", "PostgresNode", "build_node", "check",
           "check_typed", "conninfo", "export_table", "parse_dsn", "translate_sql"]

SEARCHES = ("dense", "fulltext", "hybrid")

KEYS: dict[str, Key] = {
    "dsn": Key((str,), required=True, example='"postgresql://search@db.internal:5432/docs" (password only as '
               'env:NAME, e.g. "postgresql://search:env:PG_PASSWORD@db.internal/docs")'),
    "table": Key((str,), None, example='"docs" (or "schema.docs")'),
    "search": Key((str,), "dense", example='"dense" (or "fulltext", "hybrid")'),
    "sql": Key((str,), None, example="""'SELECT doc_id, 1 - (embedding <=> :query_vector) AS score FROM docs """
               """ORDER BY embedding <=> :query_vector LIMIT :k'"""),
    "id_column": Key((str,), "doc_id", example='"doc_id"'),
    "text_column": Key((str,), "text", example='"text"'),
    "title_column": Key((str,), None, example='"title" (read to describe documents the collection lacks)'),
    "vector_column": Key((str,), "embedding", example='"embedding"'),
    "tsv_column": Key((str,), "tsv", example='"tsv" (a tsvector column)'),
    "text_config": Key((str,), None, example='"english" (default: the table\'s, else english)'),
    "tsquery": Key((str,), "or", example='"or" (any word), "and" (plainto_tsquery) or "websearch"'),
    "rank": Key((str,), "ts_rank", example='"ts_rank" or "ts_rank_cd" (cover density)'),
    "normalization": Key((int,), 1, example="1 (the rank's normalization bits: 1 divides by 1 + log(length))"),
    "distance": Key((str,), "cosine", example='"cosine" (<=>), "ip" (<#>) or "l2" (<->)'),
    "ef_search": Key((int,), None, example="40 (hnsw.ef_search, default 100; raised to the depth asked)"),
    "probes": Key((int,), None, example="10 (ivfflat.probes)"),
    "exact": Key((bool,), False, example="true (no index scan: exact nearest neighbours)"),
    "embedding_model": Key((str,), None, example='"sentence-transformers/all-MiniLM-L6-v2"'),
    "candidates": Key((int,), 100, example="100 (rows of each list fused by hybrid)"),
    "rrf_k": Key((int,), 60, example="60"),
    "timeout_s": Key((float,), 10.0, example="10 (statement timeout, and the wait for a connection)"),
    "concurrency": Key((int,), 4, example="4 (connections in the pool, queries in flight)"),
    "retries": Key((int,), 1, example="1 (a dropped connection is tried again on a fresh one)"),
}



def check(spec: StrategySpec) -> StrategySpec:
    o, where = spec.options, spec.where
    parse_dsn(o["dsn"], where)
    if (o.get("table") is None) == (o.get("sql") is None):
        raise SearchGradeError(f"{where}: give either table = \"NAME\" (with search = \"dense\", \"fulltext\" "
                               "or \"hybrid\") or sql = '...' (your own query), not both or neither")
    if o.get("sql") is not None:
        _, used = translate_sql(o["sql"], where)
        if not used & {"query", "query_vector"}:
            raise SearchGradeError(f"{where}: sql has no :query (nor :query_vector): put :query where the "
                                   "query text goes, e.g. ... WHERE tsv @@ plainto_tsquery('english', :query)")
    else:
        split_table(o["table"], where)
        if o["search"] not in SEARCHES:
            raise SearchGradeError(f"{where}: search {o['search']!r} is not known: use one of {', '.join(SEARCHES)}")
    if o["distance"] not in DISTANCES:
        raise SearchGradeError(f"{where}: distance {o['distance']!r} is not known: use one of {', '.join(DISTANCES)}")
    if o["tsquery"] not in TSQUERIES:
        raise SearchGradeError(f"{where}: tsquery {o['tsquery']!r} is not known: use one of {', '.join(TSQUERIES)}")
    if o["rank"] not in RANKS:
        raise SearchGradeError(f"{where}: rank {o['rank']!r} is not known: use one of {', '.join(RANKS)}")
    if not 0 <= o["normalization"] <= 63:
        raise SearchGradeError(f"{where}: normalization must be 0..63 (the sum of Postgres's rank normalization "
                               f"bits), got {o['normalization']!r}")
    for key in ("ef_search", "probes", "candidates", "concurrency"):
        if o.get(key) is not None and o[key] < 1:
            raise SearchGradeError(f"{where}: {key} must be >= 1, got {o[key]!r}")
    if o["rrf_k"] < 0 or o["retries"] < 0 or o["timeout_s"] <= 0:
        raise SearchGradeError(f"{where}: rrf_k and retries must be >= 0 and timeout_s > 0")
    return spec
