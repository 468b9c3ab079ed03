"""A Postgres strategy as an executor node: one query per pooled connection, in its own
transaction with its statement timeout, and how a declaration becomes one (the table checked, or
the user's SQL planned once)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

from searchgrade.core.records import Document, ScoredDoc, SearchGradeError, first_line
from searchgrade.indexes.base import FailedAttempt, Found
from searchgrade.indexes.declared.declaration import StrategySpec, check_columns, embeddings_differ, outbound_policy
from searchgrade.indexes.declared.node import DeclaredNode
from searchgrade.indexes.declared.postgres.connection import connect, conninfo, hide_password, load_psycopg, table_facts
from searchgrade.indexes.declared.postgres.export import EMBEDDED_BY
from searchgrade.indexes.declared.postgres.sql import preset_sql, split_table, translate_sql, vector_literal

#: hnsw.ef_search when the strategy sets none (pgvector's own default is 40). Measured on the SciFact
#: demo (an index made by export-index, m = 16, ef_construction = 64): recall@10 against an exact scan
#: 0.985 at 40 (nDCG@10 0.006 under exact), 0.998 at 100. ``ef_search = 40`` grades pgvector's default.
DEFAULT_EF_SEARCH = 100


class PostgresNode(DeclaredNode):
    """A declared Postgres strategy as an executor node."""

    def __init__(self, spec: StrategySpec, conninfo_: str, statement: Any, uses: frozenset[str],
                 embedder: Any | None, batch_size: int = 32, config: str = "english",
                 hnsw: bool = True) -> None:
        super().__init__(spec, embedder, batch_size)
        o = spec.options
        self.conninfo = conninfo_
        self.statement = statement
        self.uses = uses
        self.config = config
        self.search = "sql" if o.get("sql") is not None else o["search"]
        self.ef_search = o.get("ef_search")
        self.probes = o.get("probes")
        self.exact = bool(o["exact"])
        self.hnsw = hnsw
        self.candidates = int(o["candidates"])
        self.rrf_k = int(o["rrf_k"])
        self.timeout_s = float(o["timeout_s"])
        self.concurrency = int(o["concurrency"])
        self.retries = int(o["retries"])
        self._pool: Any = None
        self._lock = threading.Lock()

    def pool(self) -> Any:
        """The connection pool, opened on first use: at most ``concurrency`` connections."""
        with self._lock:
            if self._pool is None:
                try:
                    from psycopg_pool import ConnectionPool
                except ImportError as exc:
                    raise SearchGradeError("psycopg-pool is not installed (pip install psycopg-pool)") from exc
                self._pool = ConnectionPool(self.conninfo, min_size=1, max_size=self.concurrency,
                                            timeout=self.timeout_s, check=ConnectionPool.check_connection,
                                            open=True, num_workers=1, name=f"searchgrade-{self.name}")
                weakref.finalize(self, self._pool.close)
            return self._pool

    def settings(self, depth: int) -> dict[str, str]:
        """Per-transaction settings: the statement timeout and the index scans' depth."""
        out = {"statement_timeout": f"{max(1, int(self.timeout_s * 1000))}ms"}
        if self.search in ("dense", "hybrid", "sql") and self.hnsw:
            wanted = self.candidates if self.search == "hybrid" else depth
            out["hnsw.ef_search"] = str(max(self.ef_search or DEFAULT_EF_SEARCH, wanted))
        if self.probes is not None:
            out["ivfflat.probes"] = str(self.probes)
        if self.exact:
            out["enable_indexscan"] = "off"
        return out

    def params(self, text: str, vector: Any, depth: int) -> dict[str, Any]:
        values: dict[str, Any] = {"query": text, "k": depth, "config": self.config,
                                  "candidates": max(self.candidates, depth), "rrf_k": self.rrf_k}
        if vector is not None:
            values["query_vector"] = vector_literal(vector)
        return values

    def search_one(self, text: str, vector: Any, depth: int) -> Found:
        """One query in its own transaction, on a pooled connection."""
        with self.pool().connection() as conn, conn.transaction():
            for name, value in self.settings(depth).items():
                conn.execute("SELECT set_config(%s, %s, true)", (name, value))
            cursor = conn.execute(self.statement, self.params(text, vector, depth))
            columns = [c.name for c in cursor.description or ()]
            rows = cursor.fetchmany(depth)
        return _read(rows, columns)

    def explain(self, exc: Exception, attempt: int) -> FailedAttempt:  # noqa: ARG002 - retried at once
        """One line for a query's error, and whether a fresh connection may help."""
        psycopg = load_psycopg()
        from psycopg_pool import PoolTimeout

        failed = f"Postgres {self.search} search failed"
        if isinstance(exc, psycopg.errors.QueryCanceled):
            return FailedAttempt(f"{failed}: statement timeout: the query ran longer than timeout_s = "
                                 f"{self.timeout_s:g} s")
        if isinstance(exc, PoolTimeout):
            return FailedAttempt(f"{failed}: no connection to the server within timeout_s = {self.timeout_s:g} s",
                                 retry=True)
        if isinstance(exc, psycopg.OperationalError):
            return FailedAttempt(f"{failed}: the connection was lost ({first_line(exc)})", retry=True)
        return FailedAttempt(f"{failed}: {first_line(exc)}")


def _read(rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> Found:
    lowered = [c.lower() for c in columns]
    score_at = lowered.index("score") if "score" in lowered[1:] else None
    title_at = lowered.index("title") if "title" in lowered[1:] else None
    text_at = lowered.index("text") if "text" in lowered[1:] else None
    docs: list[ScoredDoc] = []
    described: dict[str, Document] = {}
    seen: set[str] = set()
    for position, row in enumerate(rows, start=1):
        if row[0] is None:
            continue
        doc_id = str(row[0])
        if doc_id in seen:
            continue
        seen.add(doc_id)
        value = row[score_at] if score_at is not None else None
        score = float(value) if isinstance(value, (int, float)) or _is_decimal(value) else 1.0 / position
        title = str(row[title_at] or "") if title_at is not None else ""
        text = str(row[text_at] or "") if text_at is not None else ""
        if title or text:
            described[doc_id] = Document(doc_id, title, text)
        docs.append(ScoredDoc(doc_id, score, len(docs) + 1))
    return Found(docs, described)


def _is_decimal(value: Any) -> bool:
    from decimal import Decimal

    return isinstance(value, Decimal)


def build_node(spec: StrategySpec, ctx: Any) -> PostgresNode:
    o, where = spec.options, spec.where
    policy = outbound_policy(spec)
    info = conninfo(spec, policy=policy)
    model = o.get("embedding_model") or ctx.settings.embedding_model
    if o.get("sql") is not None:
        text, uses = translate_sql(o["sql"], where)
        from psycopg import sql

        statement = sql.SQL(text)  # type: ignore[arg-type] - made of the user's SQL and our placeholders
        embedder = ctx.embedder(model) if "query_vector" in uses else None
        config = o.get("text_config") or "english"
        _explain(info, where, statement, uses, embedder, config, o["timeout_s"])
        return PostgresNode(spec, info, statement, uses, embedder, ctx.settings.batch_size, config)
    parts = split_table(o["table"], where)
    with connect(info, where, o["timeout_s"]) as conn:
        found = table_facts(conn, parts)
    if found is None:
        raise SearchGradeError(
            f"{where}: Postgres has no table {o['table']!r}: load one with `searchgrade export-index "
            f"COLLECTION --to postgres --dsn '{hide_password(o['dsn'])}' --table {o['table']}`")
    columns, facts = found
    needed = ["id_column"] + (["vector_column"] if o["search"] in ("dense", "hybrid") else []) + (
        ["tsv_column"] if o["search"] in ("fulltext", "hybrid") else []) + (["title_column"] if o.get("title_column") else [])
    check_columns(where, repr(o["table"]), o, needed, columns)
    embedder = None
    if o["search"] in ("dense", "hybrid"):
        embeddings_differ(where, f"Postgres table {o['table']!r}", facts.get(EMBEDDED_BY), model,
                          ctx.settings.embedding_backend,
                          f"searchgrade export-index COLLECTION --to postgres --dsn '{hide_password(o['dsn'])}' "
                          f"--table {o['table']}")
        embedder = ctx.embedder(model)
    config = o.get("text_config") or str(facts.get("text_config") or "english")
    statement = preset_sql(o, bool(o.get("title_column")))
    uses = frozenset({"query", "k"} | ({"query_vector"} if embedder is not None else set()))
    return PostgresNode(spec, info, statement, uses, embedder, ctx.settings.batch_size, config)


def _explain(info: str, where: str, statement: Any, uses: frozenset[str], embedder: Any, config: str,
             timeout_s: float) -> None:
    """The user's SQL planned once (EXPLAIN runs nothing): an unknown table or column, or a syntax
    error, stops here in one line rather than on the first query."""
    from psycopg import sql

    values: dict[str, Any] = {"query": "sample query", "k": 10, "config": config}
    if "query_vector" in uses:
        from searchgrade.indexes.embeddings.encoder import encode

        values["query_vector"] = vector_literal(encode(embedder, ["sample query"], batch_size=1)[0])
    psycopg = load_psycopg()
    with connect(info, where, timeout_s) as conn:
        try:
            conn.execute(sql.SQL("EXPLAIN {}").format(statement), values)
        except psycopg.Error as exc:
            raise SearchGradeError(f"{where}: sql does not run ({first_line(exc)}): fix the statement") from None
