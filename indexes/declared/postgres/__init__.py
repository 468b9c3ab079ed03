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
"""

from __future__ import annotations

import json
import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from searchgrade.core.outbound import OutboundPolicy
from searchgrade.core.records import Collection, Document, ScoredDoc, SearchGradeError, first_line
from searchgrade.indexes.base import FailedAttempt, Found
from searchgrade.indexes.declared.declaration import (
    Key,
    StrategySpec,
    check_typed_secret,
    embeddings_differ,
    is_env,
    outbound_policy,
    resolve_env,
)
from searchgrade.indexes.declared.node import DeclaredNode

SEARCHES = ("dense", "fulltext", "hybrid")
#: distance -> (pgvector operator, operator class of an index, the score of a distance d).
DISTANCES = {"cosine": ("<=>", "vector_cosine_ops", "1 - ({d})"), "ip": ("<#>", "vector_ip_ops", "-({d})"),
             "l2": ("<->", "vector_l2_ops", "-({d})")}
TSQUERIES = ("or", "and", "websearch")
RANKS = ("ts_rank", "ts_rank_cd")
#: The parameters a user's SQL may use.
PARAMETERS = ("query", "query_vector", "k")
#: hnsw.ef_search when the strategy sets none (pgvector's own default is 40). Measured on the SciFact
#: demo (an index made by export-index, m = 16, ef_construction = 64): recall@10 against an exact scan
#: 0.985 at 40 (nDCG@10 0.006 under exact), 0.998 at 100. ``ef_search = 40`` grades pgvector's default.
DEFAULT_EF_SEARCH = 100
#: The key of a table comment in which export-index records what embedded the vectors.
EMBEDDED_BY = "searchgrade.embedded_by"
STAGING_PREFIX = "searchgrade_staging_"
#: libpq keys a DSN typed in the app may use (others could point libpq at the server's files).
TYPED_DSN_KEYS = frozenset({"host", "port", "dbname", "user", "password", "sslmode", "connect_timeout",
                            "application_name", "options"})
#: A password file that never exists (inside the installed package): libpq reads no .pgpass.
NO_PASSFILE = str(Path(__file__).with_name("no-such-pgpass"))
#: Postgres's longest identifier, in bytes.
MAX_IDENTIFIER = 63
COPY_BATCH = 500

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


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise SearchGradeError("psycopg is not installed (pip install 'psycopg[binary]' psycopg-pool)") from exc
    return psycopg


# -- the user's SQL -------------------------------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


def translate_sql(sql: str, where: str = "") -> tuple[str, frozenset[str]]:
    """The user's SQL with ``:query``, ``:query_vector`` and ``:k`` as psycopg placeholders
    (``%(query)s``), every ``%`` doubled, and the parameters it uses. String literals, quoted
    identifiers, dollar-quoted bodies and comments are copied as they are (``':query'`` in a
    literal stays text); ``::`` casts are casts.

    Raises:
        SearchGradeError: another ``:name``, a ``$1`` placeholder, or an unterminated literal.
    """
    prefix = f"{where}: " if where else ""
    out: list[str] = []
    used: set[str] = set()
    i, n = 0, len(sql)

    def closing(quote: str, start: int, backslashes: bool = False) -> int:
        j = start + 1
        while j < n:
            if backslashes and sql[j] == "\\":
                j += 2
                continue
            if sql[j] == quote:
                if j + 1 < n and sql[j + 1] == quote:
                    j += 2
                    continue
                return j + 1
            j += 1
        kind = "string literal" if quote == "'" else "quoted identifier"
        raise SearchGradeError(f"{prefix}sql has an unterminated {kind} (from {sql[start:start + 30]!r}): "
                               f"close it with {quote}")

    while i < n:
        c = sql[i]
        if c == "'":
            # E'...' takes backslash escapes (E'it\'s'); other literals only doubled quotes.
            j = closing("'", i, backslashes=i > 0 and sql[i - 1] in "eE" and (i < 2 or not sql[i - 2].isalnum()))
            out.append(sql[i:j].replace("%", "%%"))
            i = j
        elif c == '"':
            j = closing('"', i)
            out.append(sql[i:j].replace("%", "%%"))
            i = j
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out.append(sql[i:j].replace("%", "%%"))
            i = j
        elif sql.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if sql.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif sql.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(sql[i:j].replace("%", "%%"))
            i = j
        elif c == "$":
            tag = _DOLLAR.match(sql, i)
            if tag is None:
                if i + 1 < n and sql[i + 1].isdigit():
                    raise SearchGradeError(f"{prefix}sql uses a positional parameter ($1): write :query, "
                                           ":query_vector and :k instead")
                out.append(c)
                i += 1
                continue
            end = sql.find(tag.group(0), tag.end())
            if end < 0:
                raise SearchGradeError(f"{prefix}sql has an unterminated {tag.group(0)} quoted body: "
                                       f"close it with {tag.group(0)}")
            j = end + len(tag.group(0))
            out.append(sql[i:j].replace("%", "%%"))
            i = j
        elif c == ":":
            if sql.startswith("::", i):
                out.append("::")
                i += 2
                continue
            name = _NAME.match(sql, i + 1)
            if name is None:
                out.append(c)
                i += 1
                continue
            if name.group(0) not in PARAMETERS:
                raise SearchGradeError(f"{prefix}sql has :{name.group(0)}: only :query (the text), "
                                       ":query_vector (the embedded query) and :k (the depth) are bound")
            used.add(name.group(0))
            out.append(f"%({name.group(0)})s")
            i = name.end()
        elif c == "%":
            out.append("%%")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out), frozenset(used)


# -- checks ---------------------------------------------------------------------------------------

def parse_dsn(dsn: str, where: str) -> dict[str, str]:
    """A DSN (URL or ``key=value`` form) as libpq reads it.

    Raises:
        SearchGradeError: libpq cannot read it, or its password is literal.
    """
    psycopg = _psycopg()
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise SearchGradeError(f"{where}: dsn is not a connection string libpq reads ({first_line(exc)}): "
                               'write e.g. dsn = "postgresql://search@db.internal:5432/docs"') from None
    password = params.get("password")
    if password and not is_env(password):
        raise SearchGradeError(f"{where}: dsn holds a literal password: put it in the environment and "
                               'write it as env:NAME (e.g. "postgresql://search:env:PG_PASSWORD@db/docs"); '
                               "the declaration is stored with every run")
    return {k: str(v) for k, v in params.items()}


def split_table(name: str, where: str = "", key: str = "table") -> tuple[str, ...]:
    """``"docs"`` or ``"schema.docs"`` as identifier parts (quoted, never formatted, when used)."""
    parts = tuple(name.split("."))
    if not 1 <= len(parts) <= 2 or not all(parts) or any(len(p.encode()) > MAX_IDENTIFIER for p in parts):
        raise SearchGradeError(f"{where + ': ' if where else ''}{key} {name!r} is not a table name: write "
                               f'"docs" or "schema.docs" (each part up to {MAX_IDENTIFIER} bytes)')
    return parts


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


def check_typed(spec: StrategySpec, policy: OutboundPolicy) -> dict[str, str]:
    """A DSN typed in the app: the libpq keys it may use, one host the policy accepts (or a socket
    folder inside the collections root), and a password bound to that host. Returns the libpq
    parameters to connect with: the checked address pinned (``hostaddr``), and every source of the
    server's own credentials closed.

    Raises:
        SearchGradeError: one line naming the key and the fix.
    """
    where = spec.where
    params = parse_dsn(spec.options["dsn"], where)
    other = sorted(set(params) - TYPED_DSN_KEYS)
    if other:
        raise SearchGradeError(f"{where}: dsn sets {other[0]}, which a DSN typed in the app may not: use "
                               f"only {', '.join(sorted(TYPED_DSN_KEYS))}")
    host = params.get("host", "")
    if not host or "," in host:
        raise SearchGradeError(f"{where}: dsn must name one host (a server, or a socket folder inside the "
                               "collections root): add host, e.g. postgresql://search@db.internal/docs")
    if host.startswith("/"):
        params["host"] = str(policy.check_path(host, f"{where}: dsn host"))
    else:
        port = int(params.get("port") or 5432)
        params["hostaddr"] = policy.check_host(host, port, f"{where}: dsn host")[0]
    check_typed_secret(policy, where, "dsn password", params.get("password"), host)
    # libpq would otherwise fill in what the DSN leaves out from the server's environment and files.
    params.setdefault("password", "")
    params.update(passfile=NO_PASSFILE, sslcertmode="disable", gssencmode="disable",
                  require_auth="password,md5,scram-sha-256,none")
    return params


def conninfo(spec: StrategySpec, environ: Mapping[str, str] | None = None,
             policy: OutboundPolicy | None = None) -> str:
    """The connection string the strategy connects with (``env:`` password read now)."""
    psycopg = _psycopg()
    where = spec.where
    params = check_typed(spec, policy) if policy is not None else parse_dsn(spec.options["dsn"], where)
    if is_env(params.get("password")):
        params["password"] = resolve_env(params["password"], where, "dsn password", environ)
    params.setdefault("connect_timeout", str(max(1, int(spec.options["timeout_s"]))))
    return psycopg.conninfo.make_conninfo(**params)


# -- statements -----------------------------------------------------------------------------------

def _ident(*parts: str) -> Any:
    from psycopg import sql

    return sql.Identifier(*parts)


def _tsquery(mode: str) -> Any:
    from psycopg import sql

    parse = {"or": "replace(plainto_tsquery(%(config)s::regconfig, %(query)s)::text, ' & ', ' | ')::tsquery",
             "and": "plainto_tsquery(%(config)s::regconfig, %(query)s)",
             "websearch": "websearch_to_tsquery(%(config)s::regconfig, %(query)s)"}[mode]
    return sql.SQL(parse)


def preset_sql(o: Mapping[str, Any], title: bool) -> Any:
    """The statement of a preset search (identifiers quoted by psycopg, values bound)."""
    from psycopg import sql

    table = _ident(*split_table(o["table"]))
    doc_id, vector, tsv = _ident(o["id_column"]), _ident(o["vector_column"]), _ident(o["tsv_column"])
    operator, _, score = DISTANCES[o["distance"]]
    distance = sql.SQL("{v} {op} %(query_vector)s::vector").format(v=vector, op=sql.SQL(operator))
    described = sql.SQL(", {title}").format(title=_ident(o["title_column"])) if title else sql.SQL("")
    if o["search"] == "dense":
        return sql.SQL("SELECT {id}::text, {score} AS score{described} FROM {table} ORDER BY {d} LIMIT %(k)s").format(
            id=doc_id, score=sql.SQL(score).format(d=distance), described=described,
            table=table, d=distance)
    text_hits = sql.SQL(
        "SELECT {id} AS id, {rank}({tsv}, terms.q, {normalization}) AS score FROM {table}, (SELECT {parse} AS q) "
        "terms WHERE {tsv} @@ terms.q ORDER BY score DESC, {id} LIMIT {limit}").format(
            id=doc_id, tsv=tsv, table=table, parse=_tsquery(o["tsquery"]), rank=sql.SQL(RANKS[RANKS.index(o["rank"])]),
            normalization=sql.Literal(int(o["normalization"])),
            limit=sql.SQL("%(candidates)s" if o["search"] == "hybrid" else "%(k)s"))
    if o["search"] == "fulltext":
        if not title:
            return sql.SQL("SELECT id::text, score FROM ({hits}) hits").format(hits=text_hits)
        return sql.SQL("SELECT hits.id::text, hits.score, t.{title} FROM ({hits}) hits JOIN {table} t ON t.{id} "
                       "= hits.id ORDER BY hits.score DESC, hits.id").format(
            hits=text_hits, title=_ident(o["title_column"]), table=table, id=doc_id)
    return sql.SQL(
        "WITH dense_hits AS (SELECT id, row_number() OVER (ORDER BY d, id) AS r FROM ("
        "SELECT {id} AS id, {d} AS d FROM {table} ORDER BY d LIMIT %(candidates)s) s), "
        "text_hits AS (SELECT id, row_number() OVER (ORDER BY score DESC, id) AS r FROM ({hits}) s) "
        "SELECT coalesce(dense_hits.id, text_hits.id)::text AS id, "
        "coalesce(1.0 / (%(rrf_k)s + dense_hits.r), 0) + coalesce(1.0 / (%(rrf_k)s + text_hits.r), 0) AS score "
        "FROM dense_hits FULL OUTER JOIN text_hits ON dense_hits.id = text_hits.id "
        "ORDER BY score DESC, id LIMIT %(k)s").format(id=doc_id, d=distance, table=table, hits=text_hits)


def vector_literal(vector: Any) -> str:
    """A pgvector literal, every float32 as Python prints it (exact)."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


# -- the node -------------------------------------------------------------------------------------

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
        psycopg = _psycopg()
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


# -- building -------------------------------------------------------------------------------------

def _table_facts(conn: Any, parts: tuple[str, ...]) -> tuple[dict[str, str], dict[str, Any]] | None:
    """The table's columns (name -> type) and the JSON of its comment; None when it is not there."""
    name = ".".join(f'"{p}"' for p in (p.replace('"', '""') for p in parts))
    oid = conn.execute("SELECT to_regclass(%s)::oid", (name,)).fetchone()[0]
    if oid is None:
        return None
    columns = dict(conn.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s "
        "AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (oid,)).fetchall())
    comment = conn.execute("SELECT obj_description(%s, 'pg_class')", (oid,)).fetchone()[0]
    try:
        facts = json.loads(comment) if comment else {}
    except ValueError:
        facts = {}
    return columns, facts if isinstance(facts, dict) else {}


def _connect(conninfo_: str, where: str, timeout_s: float) -> Any:
    psycopg = _psycopg()
    try:
        return psycopg.connect(conninfo_, connect_timeout=max(1, int(timeout_s)), autocommit=True)
    except psycopg.Error as exc:
        raise SearchGradeError(f"{where}: cannot connect to Postgres ({first_line(exc)}): check dsn, and "
                               "that the server is running") from None


def _hide_password(dsn: str) -> str:
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", dsn))


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
    with _connect(info, where, o["timeout_s"]) as conn:
        found = _table_facts(conn, parts)
    if found is None:
        raise SearchGradeError(
            f"{where}: Postgres has no table {o['table']!r}: load one with `searchgrade export-index "
            f"COLLECTION --to postgres --dsn '{_hide_password(o['dsn'])}' --table {o['table']}`")
    columns, facts = found
    needed = ["id_column"] + (["vector_column"] if o["search"] in ("dense", "hybrid") else []) + (
        ["tsv_column"] if o["search"] in ("fulltext", "hybrid") else []) + (["title_column"] if o.get("title_column") else [])
    for key in needed:
        if o[key] not in columns:
            raise SearchGradeError(f"{where}: {key} {o[key]!r} is not a column of {o['table']!r}: its columns "
                                   f"are {', '.join(columns)}; set {key} = \"...\"")
    embedder = None
    if o["search"] in ("dense", "hybrid"):
        embeddings_differ(where, f"Postgres table {o['table']!r}", facts.get(EMBEDDED_BY), model,
                          ctx.settings.embedding_backend,
                          f"searchgrade export-index COLLECTION --to postgres --dsn '{_hide_password(o['dsn'])}' "
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
    psycopg = _psycopg()
    with _connect(info, where, timeout_s) as conn:
        try:
            conn.execute(sql.SQL("EXPLAIN {}").format(statement), values)
        except psycopg.Error as exc:
            raise SearchGradeError(f"{where}: sql does not run ({first_line(exc)}): fix the statement") from None


# -- export-index --to postgres ---------------------------------------------------------------------

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

    psycopg = _psycopg()
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
        return _ident(schema, relation) if schema else _ident(relation)

    dim = int(vectors.shape[1])
    total = len(collection.documents)
    try:
        conn = psycopg.connect(info)
    except psycopg.Error as exc:
        raise SearchGradeError(f"{where}: cannot connect to Postgres ({first_line(exc)}): check --dsn") from None
    try:
        with conn:  # one transaction: committed at the end, rolled back on any error
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            exists = _table_facts(conn, parts) is not None
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
                i=_ident(staging + "_tsv"), t=qualified(staging)))
            conn.execute(sql.SQL(
                "CREATE INDEX {i} ON {t} USING hnsw (embedding vector_cosine_ops) "
                "WITH (m = {m}, ef_construction = {ef})").format(
                i=_ident(staging + "_hnsw"), t=qualified(staging), m=sql.Literal(hnsw_m),
                ef=sql.Literal(ef_construction)))
            facts = {"text_config": text_config, **({EMBEDDED_BY: embedding} if embedding else {})}
            conn.execute(sql.SQL("COMMENT ON TABLE {t} IS {c}").format(
                t=qualified(staging), c=sql.Literal(json.dumps(facts, sort_keys=True))))
            if exists:
                conn.execute(sql.SQL("DROP TABLE {}").format(qualified(name)))
            conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(qualified(staging), _ident(name)))
            for suffix in ("_tsv", "_hnsw", "_pkey"):
                conn.execute(sql.SQL("ALTER INDEX {} RENAME TO {}").format(
                    qualified(staging + suffix), _ident(name + suffix)))
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
