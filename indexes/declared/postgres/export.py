"""``searchgrade export-index ... --to postgres``: one of our collections loaded into a Postgres
table, in one transaction."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from searchgrade.core.records import Collection, SearchGradeError, first_line
from searchgrade.indexes.declared.declaration import StrategySpec
from searchgrade.indexes.declared.postgres.connection import conninfo, load_psycopg, parse_dsn, table_facts
from searchgrade.indexes.declared.postgres.sql import MAX_IDENTIFIER, identifier, split_table, vector_literal

#: The key of a table comment in which export-index records what embedded the vectors.
EMBEDDED_BY = "searchgrade.embedded_by"
STAGING_PREFIX = "searchgrade_staging_"
COPY_BATCH = 500


def export_table(collection: Collection, vectors: Any, dsn: str, table: str, *, replace: bool = False,
                 embedding: dict[str, str] | None = None, text_config: str = "english",
                 hnsw_m: int = 16, ef_construction: int = 64,
                 progress: Callable[[str, int, int], None] | None = None,
                 environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Create Postgres table ``table`` from our documents and vectors: ``doc_id`` (primary key),
    ``title``, ``text``, ``embedding`` (pgvector, an HNSW index for cosine distance) and ``tsv`` (a
    generated ``tsvector`` of the text, a GIN index).

    The whole load is one transaction: the table is built under a staging name, indexed, then the
    old table (with ``replace``) dropped and the new one renamed into place, and committed at once.
    A load that fails, is interrupted or loses its connection rolls back: the old table is as it
    was and no staging table is left.

    Args:
        embedding: what embedded the vectors (``declaration.embedded_by``), recorded in the table's
            comment with the text search configuration.
        dsn: libpq connection string; a password only as ``env:NAME``.

    Returns:
        What was done: documents, dimension, seconds, table.

    Raises:
        SearchGradeError: the table exists (without replace), the server refuses, or the load fails.
    """
    from psycopg import sql

    psycopg = load_psycopg()
    started = time.perf_counter()
    where = f"export-index --to postgres --table {table}"
    parts = split_table(table, where, "--table")
    schema, name = (parts if len(parts) == 2 else (None, parts[0]))
    staging = STAGING_PREFIX + name
    if len(staging.encode()) > MAX_IDENTIFIER:
        raise SearchGradeError(f"--table {table!r}: a name of up to {MAX_IDENTIFIER - len(STAGING_PREFIX)} bytes "
                               "is needed (it is loaded under a staging name first)")
    if len(vectors) != len(collection.documents):
        raise ValueError(f"{len(vectors)} vectors for {len(collection.documents)} documents")
    spec = StrategySpec("export", "postgres", {"dsn": dsn, "timeout_s": 30.0}, source=where)
    parse_dsn(dsn, where)
    info = conninfo(spec, environ)

    def qualified(relation: str) -> Any:
        return identifier(schema, relation) if schema else identifier(relation)

    dim = int(vectors.shape[1])
    total = len(collection.documents)
    try:
        conn = psycopg.connect(info)
    except psycopg.Error as exc:
        raise SearchGradeError(f"{where}: cannot connect to Postgres ({first_line(exc)}): check --dsn") from None
    try:
        with conn:  # one transaction: committed at the end, rolled back on any error
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            exists = table_facts(conn, parts) is not None
            if exists and not replace:
                raise SearchGradeError(f"Postgres already has a table {table!r}: pass --replace to replace it "
                                       "(loaded aside and swapped in when complete), or another --table")
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(qualified(staging)))
            conn.execute(sql.SQL(
                "CREATE TABLE {t} (doc_id text PRIMARY KEY, title text NOT NULL, text text NOT NULL, "
                "embedding vector({dim}) NOT NULL, tsv tsvector GENERATED ALWAYS AS "
                "(to_tsvector({config}::regconfig, text)) STORED)").format(
                t=qualified(staging), dim=sql.Literal(dim), config=sql.Literal(text_config)))
            with conn.cursor().copy(sql.SQL("COPY {} (doc_id, title, text, embedding) FROM STDIN").format(
                    qualified(staging))) as copy:
                for start in range(0, total, COPY_BATCH):
                    for doc, vector in zip(collection.documents[start:start + COPY_BATCH],
                                           vectors[start:start + COPY_BATCH], strict=True):
                        copy.write_row((doc.doc_id, doc.title.replace("\x00", ""),
                                        doc.content.replace("\x00", ""), vector_literal(vector)))
                    if progress is not None:
                        progress("export", min(total, start + COPY_BATCH), total)
            conn.execute(sql.SQL("CREATE INDEX {i} ON {t} USING gin (tsv)").format(
                i=identifier(staging + "_tsv"), t=qualified(staging)))
            conn.execute(sql.SQL(
                "CREATE INDEX {i} ON {t} USING hnsw (embedding vector_cosine_ops) "
                "WITH (m = {m}, ef_construction = {ef})").format(
                i=identifier(staging + "_hnsw"), t=qualified(staging), m=sql.Literal(hnsw_m),
                ef=sql.Literal(ef_construction)))
            facts = {"text_config": text_config, **({EMBEDDED_BY: embedding} if embedding else {})}
            conn.execute(sql.SQL("COMMENT ON TABLE {t} IS {c}").format(
                t=qualified(staging), c=sql.Literal(json.dumps(facts, sort_keys=True))))
            if exists:
                conn.execute(sql.SQL("DROP TABLE {}").format(qualified(name)))
            conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(qualified(staging), identifier(name)))
            for suffix in ("_tsv", "_hnsw", "_pkey"):
                conn.execute(sql.SQL("ALTER INDEX {} RENAME TO {}").format(
                    qualified(staging + suffix), identifier(name + suffix)))
            conn.execute(sql.SQL("ANALYZE {}").format(qualified(name)))
    except SearchGradeError:
        raise
    except psycopg.Error as exc:
        kept = f"; the existing {table!r} is unchanged" if replace else ""
        raise SearchGradeError(f"Postgres failed while loading {table!r} ({first_line(exc)}): nothing was "
                               f"committed{kept}") from None
    except Exception as exc:  # noqa: BLE001 - any failure while loading is one line, and nothing is committed
        kept = f"; the existing {table!r} is unchanged" if replace else ""
        raise SearchGradeError(f"loading {table!r} into Postgres failed ({first_line(exc)}): nothing was "
                               f"committed{kept}") from None
    finally:
        conn.close()
    return {"documents": total, "dim": dim, "seconds": time.perf_counter() - started, "table": table}
