"""The SQL of a Postgres strategy: the user's own statement with its named parameters bound
(``translate_sql``), the presets' statements (``preset_sql``), and the names and values they quote.

The user's SQL is read by sqlglot's Postgres tokenizer (tested with 30.30), which knows what
Postgres quotes: string literals (standard and ``E'...'`` with backslash escapes), quoted
identifiers, ``$tag$`` bodies and comments (nested ones too), so ``':query'`` in a literal stays
text and ``::`` is a cast. Only the positions of its tokens are used: the statement runs as the
user wrote it, each ``:name`` replaced by a psycopg placeholder and every ``%`` doubled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from searchgrade.core.records import SearchGradeError, first_line

#: distance -> (pgvector operator, operator class of an index, the score of a distance d).
DISTANCES = {"cosine": ("<=>", "vector_cosine_ops", "1 - ({d})"), "ip": ("<#>", "vector_ip_ops", "-({d})"),
             "l2": ("<->", "vector_l2_ops", "-({d})")}
TSQUERIES = ("or", "and", "websearch")
RANKS = ("ts_rank", "ts_rank_cd")
#: The parameters a user's SQL may use.
PARAMETERS = ("query", "query_vector", "k")
#: Postgres's longest identifier, in bytes.
MAX_IDENTIFIER = 63

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def translate_sql(sql: str, where: str = "") -> tuple[str, frozenset[str]]:
    """The user's SQL with ``:query``, ``:query_vector`` and ``:k`` as psycopg placeholders
    (``%(query)s``), every ``%`` doubled, and the parameters it uses. String literals, quoted
    identifiers, dollar-quoted bodies and comments are copied as they are (``':query'`` in a
    literal stays text); ``::`` casts are casts.

    Raises:
        SearchGradeError: another ``:name``, a ``$1`` placeholder, or an unterminated literal.
    """
    try:
        from sqlglot.dialects.postgres import Postgres
        from sqlglot.errors import TokenError
        from sqlglot.tokens import TokenType
    except ImportError as exc:
        raise SearchGradeError("sqlglot is not installed (pip install 'sqlglot>=30.30,<31')") from exc

    prefix = f"{where}: " if where else ""
    try:
        tokens = Postgres().tokenize(sql)
    except TokenError as exc:
        raise SearchGradeError(f"{prefix}sql has an unterminated string literal, quoted identifier, $tag$ body or "
                               f"comment ({first_line(exc.__cause__ or exc)}): close it") from None
    bound: list[tuple[int, int, str]] = []  # (start, end) of each ":name" in sql, and the name
    for before, token in zip(tokens, tokens[1:], strict=False):
        adjacent = token.start == before.end + 1
        if before.token_type == TokenType.PARAMETER and adjacent and token.text.isdigit():
            raise SearchGradeError(f"{prefix}sql uses a positional parameter ($1): write :query, "
                                   ":query_vector and :k instead")
        if before.token_type != TokenType.COLON or not adjacent or not _NAME.fullmatch(token.text):
            continue
        if token.text not in PARAMETERS:
            raise SearchGradeError(f"{prefix}sql has :{token.text}: only :query (the text), "
                                   ":query_vector (the embedded query) and :k (the depth) are bound")
        bound.append((before.start, token.end + 1, token.text))
    out: list[str] = []
    done = 0
    for start, end, name in bound:
        out += [sql[done:start].replace("%", "%%"), f"%({name})s"]
        done = end
    out.append(sql[done:].replace("%", "%%"))
    return "".join(out), frozenset(name for _, _, name in bound)


def split_table(name: str, where: str = "", key: str = "table") -> tuple[str, ...]:
    """``"docs"`` or ``"schema.docs"`` as identifier parts (quoted, never formatted, when used)."""
    parts = tuple(name.split("."))
    if not 1 <= len(parts) <= 2 or not all(parts) or any(len(p.encode()) > MAX_IDENTIFIER for p in parts):
        raise SearchGradeError(f"{where + ': ' if where else ''}{key} {name!r} is not a table name: write "
                               f'"docs" or "schema.docs" (each part up to {MAX_IDENTIFIER} bytes)')
    return parts


def identifier(*parts: str) -> Any:
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

    table = identifier(*split_table(o["table"]))
    doc_id, vector, tsv = identifier(o["id_column"]), identifier(o["vector_column"]), identifier(o["tsv_column"])
    operator, _, score = DISTANCES[o["distance"]]
    distance = sql.SQL("{v} {op} %(query_vector)s::vector").format(v=vector, op=sql.SQL(operator))
    described = sql.SQL(", {title}").format(title=identifier(o["title_column"])) if title else sql.SQL("")
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
            hits=text_hits, title=identifier(o["title_column"]), table=table, id=doc_id)
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


