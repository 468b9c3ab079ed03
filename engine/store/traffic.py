"""Query logs, query sets and click stats: the SQL that reads a log or an events file straight from
disk with DuckDB (``read_csv`` / ``read_json_objects`` / ``read_parquet``), aggregates it there, and
stores only the aggregate, in one transaction.

A log of ten million rows never becomes Python objects: DuckDB streams the file, groups it by the
normalised query text (two levels when it has a user column, so distinct users are counted without
a set per query) and spills to disk past ``IMPORT_MEMORY``. The privacy floor is applied in the same
transaction, before anything is inserted: a query below it is never written to the store file.

No identifier from a file reaches the SQL: the file's columns are renamed by position
(``AS t(c0, c1, ...)``) and a nested field is read with ``json_extract_string`` and a JSON pointer
passed as a parameter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import duckdb

from searchgrade.core.records import SearchGradeError, first_line
from searchgrade.engine.store.connection import StoreConnection, insert_frame, now_utc

if TYPE_CHECKING:
    import numpy as np

    from searchgrade.engine.traffic.files import FileSpec, Roles

#: DuckDB's memory while it imports a log or events (it spills past this to the store's .tmp folder).
IMPORT_MEMORY = "512MB"
#: Rows of a JSON or Parquet file read to find nested fields.
SAMPLE_ROWS = 200

_NORMALISED = "regexp_replace(lower(trim(nfc_normalize({x}))), '\\s+', ' ', 'g')"
# An ISO time with an offset or Z is converted to UTC; one without is taken as UTC; a number is
# epoch seconds (or ms past 1e11, us past 1e14).
_TIME = """CASE
    WHEN {x} IS NULL OR trim({x}) = '' THEN NULL
    WHEN regexp_full_match(trim({x}), '-?[0-9]+(\\.[0-9]+)?') THEN make_timestamp(CAST(
        CASE WHEN abs(CAST({x} AS DOUBLE)) >= 1e14 THEN CAST({x} AS DOUBLE)
             WHEN abs(CAST({x} AS DOUBLE)) >= 1e11 THEN CAST({x} AS DOUBLE) * 1000
             ELSE CAST({x} AS DOUBLE) * 1000000 END AS BIGINT))
    WHEN regexp_matches(trim({x}), '[0-9]{{2}}:[0-9]{{2}}(:[0-9]{{2}}(\\.[0-9]+)?)?\\s*(Z|z|[+-][0-9]{{2}}(:?[0-9]{{2}})?)$')
        THEN timezone('UTC', try_cast(trim({x}) AS TIMESTAMPTZ))
    ELSE try_cast(trim({x}) AS TIMESTAMP) END"""


def _pointer(parts: Sequence[str]) -> str:
    """A JSON pointer (RFC 6901) to a nested field."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def relation(spec: FileSpec) -> str:
    """The file as a table function, its columns renamed c0, c1, ... by position (no name from
    the file in the SQL). Its one parameter is the path."""
    if spec.fmt == "json":
        return "read_json_objects(?, format = 'auto') AS t(c0)"
    columns = ", ".join(f"c{i}" for i in range(len(spec.names)))
    if spec.fmt == "csv":
        return f"read_csv(?, all_varchar = true, header = true) AS t({columns})"
    return f"read_parquet(?) AS t({columns})"


def column(spec: FileSpec, path: tuple[str, ...] | None) -> tuple[str, list[Any]]:
    """SQL reading a column (or nested field) as VARCHAR, and its parameters; NULL for no column."""
    if path is None:
        return "CAST(NULL AS VARCHAR)", []
    if spec.fmt == "json":
        return "json_extract_string(c0, ?)", [_pointer(path)]
    index = spec.names.index(path[0])
    if len(path) == 1:
        return f"CAST(c{index} AS VARCHAR)", []
    return f"json_extract_string(to_json(c{index}), ?)", [_pointer(path[1:])]


def _nested_paths(value: Any, prefix: tuple[str, ...], depth: int, out: dict[tuple[str, ...], None]) -> None:
    if not isinstance(value, dict) or depth == 0:
        return
    for key, inner in value.items():
        path = (*prefix, str(key))
        if len(path) > 1:
            out[path] = None
        _nested_paths(inner, path, depth - 1, out)


class TrafficMixin(StoreConnection):
    """Query logs, query sets and click stats."""

    # -- reading a file

    def describe_file(self, path: Any, fmt: str) -> FileSpec:
        """The file's columns (and, for JSON and Parquet, the fields nested in its first rows)."""
        from searchgrade.engine.traffic.files import FileSpec

        con = duckdb.connect()  # in memory: describing a file needs no store
        try:
            if fmt == "json":
                rows = con.execute("SELECT json FROM read_json_objects(?, format = 'auto') LIMIT ?",
                                   [str(path), SAMPLE_ROWS]).fetchall()
                names: dict[str, None] = {}
                nested: dict[tuple[str, ...], None] = {}
                for (raw,) in rows:
                    obj = json.loads(raw)
                    if not isinstance(obj, dict):
                        raise SearchGradeError(f"{path}: a JSON line is not an object ({raw[:40]!r}); "
                                               "give one JSON object per line")
                    names.update(dict.fromkeys(str(k) for k in obj))
                    _nested_paths(obj, (), 3, nested)
                return FileSpec(path, fmt, tuple(names), tuple(nested))
            reader = ("read_csv(?, all_varchar = true, header = true)" if fmt == "csv"
                      else "read_parquet(?)")
            described = con.execute(f"DESCRIBE SELECT * FROM {reader}", [str(path)]).fetchall()  # noqa: S608 - columns by position, values bound
            names_ = tuple(row[0] for row in described)
            nested = {}
            if fmt == "parquet":
                structs = [i for i, row in enumerate(described) if str(row[1]).startswith("STRUCT")]
                if structs:
                    spec = FileSpec(path, fmt, names_)
                    picks = ", ".join(f"to_json(c{i})" for i in structs)
                    for row in con.execute(f"SELECT {picks} FROM {relation(spec)} LIMIT ?",  # noqa: S608 - columns by position, values bound
                                           [str(path), SAMPLE_ROWS]).fetchall():
                        for i, raw in zip(structs, row, strict=True):
                            if raw is not None:
                                _nested_paths({names_[i]: json.loads(raw)}, (), 4, nested)
            return FileSpec(path, fmt, names_, tuple(nested))
        except duckdb.Error as exc:
            raise SearchGradeError(f"{path}: cannot be read as {fmt.upper()} ({first_line(exc)}); check the "
                                   "file, or say its format with --format csv|json|parquet") from None
        finally:
            con.close()

    @contextmanager
    def _bounded(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A transaction whose DuckDB work stays under IMPORT_MEMORY (spilling to disk past it)."""
        with self.connect() as con:
            con.execute(f"SET memory_limit = '{IMPORT_MEMORY}'")
            con.execute("SET preserve_insertion_order = false")
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            else:
                con.execute("COMMIT")
            finally:
                con.execute("RESET memory_limit")
                con.execute("RESET preserve_insertion_order")

    # -- query logs

    def query_log_exists(self, log_name: str) -> bool:
        return bool(self._dicts("SELECT 1 AS x FROM query_logs WHERE log_name = ?", [log_name]))

    def import_query_log(self, spec: FileSpec, roles: Roles, record: dict[str, Any], *,
                         replace: bool) -> dict[str, Any]:
        """Aggregate a log file into its distinct normalised queries, apply the privacy floor, and
        store what passes, all in one transaction; returns the counts (nothing is stored on error).

        Args:
            record: log_name, collection_name, source, layout, min_count, min_users.
        """
        name = record["log_name"]
        q_sql, q_par = column(spec, roles.get("query"))
        t_sql, t_par = column(spec, roles.get("time"))
        u_sql, u_par = column(spec, roles.get("user"))
        n_sql, n_par = column(spec, roles.get("count"))
        counted = roles.get("count") is not None
        source = (f"SELECT {q_sql} AS q, {t_sql} AS tv, {u_sql} AS u, {n_sql} AS nv FROM {relation(spec)}")  # noqa: S608 - columns by position, values bound
        params = [*q_par, *t_par, *u_par, *n_par, str(spec.path)]
        parsed = (
            f"SELECT {_NORMALISED.format(x='q')} AS text, {_TIME.format(x='tv')} AS t, tv, u, "  # noqa: S608 - columns by position, values bound
            + ("try_cast(trim(nv) AS DOUBLE)" if counted else "1.0") + " AS n, nv FROM src")
        flagged = (
            "SELECT text, t, u, CAST(coalesce(n, 0) AS BIGINT) AS n, "  # noqa: S608 - columns by position, values bound
            "CAST(tv IS NOT NULL AND trim(tv) <> '' AND t IS NULL AS INTEGER) AS bad_time, "
            + ("CAST(n IS NULL OR n < 0 OR n <> floor(n) AS INTEGER)" if counted else "0")
            + " AS bad_count FROM parsed")
        with self._bounded() as con:
            try:
                con.execute(
                    f"CREATE TEMP TABLE _log AS WITH src AS ({source}), parsed AS ({parsed}), "  # noqa: S608 - columns by position, values bound
                    f"flagged AS ({flagged}), by_user AS ("
                    "SELECT text, u, sum(n) AS n, min(t) AS first_seen, max(t) AS last_seen, "
                    "sum(bad_time) AS bad_time, sum(bad_count) AS bad_count, count(*) AS rows_read "
                    "FROM flagged GROUP BY text, u) "
                    "SELECT text, sum(n) AS searches, count(u) AS users, min(first_seen) AS first_seen, "
                    "max(last_seen) AS last_seen, sum(bad_time) AS bad_time, sum(bad_count) AS bad_count, "
                    "sum(rows_read) AS rows_read FROM by_user GROUP BY text", params)
            except duckdb.Error as exc:
                raise SearchGradeError(f"{spec.path}: cannot be read ({first_line(exc)}); check that it is "
                                       f"{spec.fmt.upper()} throughout") from None
            totals = con.execute(
                "SELECT coalesce(sum(rows_read), 0), coalesce(sum(bad_time), 0), coalesce(sum(bad_count), 0), "
                "count(*) FILTER (text IS NOT NULL AND text <> ''), "
                "coalesce(sum(searches) FILTER (text IS NOT NULL AND text <> ''), 0), "
                "coalesce(sum(rows_read) FILTER (text IS NULL OR text = ''), 0), "
                "min(first_seen) FILTER (text <> ''), max(last_seen) FILTER (text <> '') FROM _log").fetchone()
            rows_read, bad_time, bad_count, queries, searches, empty, first_seen, last_seen = totals
            if bad_time:
                (example,) = con.execute(
                    f"WITH src AS ({source}) SELECT tv FROM src WHERE tv IS NOT NULL AND trim(tv) <> '' "  # noqa: S608 - columns by position, values bound
                    f"AND ({_TIME.format(x='tv')}) IS NULL LIMIT 1", params).fetchone()
                raise SearchGradeError(
                    f"{spec.path}: {bad_time:,} of {rows_read:,} rows have a time that is not a time in column "
                    f"{roles.shown()['time']} (e.g. {example!r}); use ISO 8601 (2024-05-01T12:00:00Z) or "
                    "epoch seconds, or --time-field '' to import without times")
            if bad_count:
                (example,) = con.execute(
                    f"WITH src AS ({source}) SELECT nv FROM src WHERE try_cast(trim(nv) AS DOUBLE) IS NULL "  # noqa: S608 - columns by position, values bound
                    "OR try_cast(trim(nv) AS DOUBLE) < 0 OR try_cast(trim(nv) AS DOUBLE) <> "
                    "floor(try_cast(trim(nv) AS DOUBLE)) LIMIT 1", params).fetchone()
                raise SearchGradeError(
                    f"{spec.path}: {bad_count:,} of {rows_read:,} rows have a count that is not a whole number "
                    f"of searches in column {roles.shown()['count']} (e.g. {example!r}); fix them, or name "
                    "the right column with --count-field")
            if not queries:
                raise SearchGradeError(f"{spec.path}: no row has a query text in column {roles.shown()['query']}; "
                                       "name the query column with --query-field")
            if replace:
                self._delete_log(con, name)
            con.execute(
                "INSERT INTO query_log_queries SELECT ?, row_number() OVER (ORDER BY searches DESC, text), text, "
                "searches, CASE WHEN ? THEN users END, first_seen, last_seen FROM _log "
                "WHERE text IS NOT NULL AND text <> '' AND searches >= ? AND searches > 0 AND (NOT ? OR users >= ?)",
                [name, roles.get("user") is not None, record["min_count"], roles.get("user") is not None,
                 record["min_users"]])
            kept_queries, kept_searches = con.execute(
                "SELECT count(*), coalesce(sum(searches), 0) FROM query_log_queries WHERE log_name = ?",
                [name]).fetchone()
            if not kept_queries:
                raise SearchGradeError(
                    f"{spec.path}: every one of its {queries:,} queries is below the privacy floor "
                    f"(--min-count {record['min_count']}, --min-users {record['min_users']}); nothing was stored: "
                    "lower them")
            ids = 0
            if roles.get("id") is not None:
                i_sql, i_par = column(spec, roles.get("id"))
                con.execute(
                    f"INSERT INTO query_log_ids WITH src AS (SELECT {i_sql} AS query_id, {q_sql} AS q "  # noqa: S608 - columns by position, values bound
                    f"FROM {relation(spec)}) SELECT ?, s.query_id, min(k.rank) FROM src s "
                    "LEFT JOIN query_log_queries k ON k.log_name = ? "
                    f"AND k.text = {_NORMALISED.format(x='s.q')} WHERE s.query_id IS NOT NULL AND "
                    "trim(s.query_id) <> '' GROUP BY s.query_id",
                    [*i_par, *q_par, str(spec.path), name, name])
                ids = con.execute("SELECT count(*) FROM query_log_ids WHERE log_name = ?", [name]).fetchone()[0]
            summary = {**record, "rows_read": int(rows_read), "searches": int(searches), "queries": int(queries),
                       "kept_queries": int(kept_queries), "kept_searches": int(kept_searches),
                       "empty_rows": int(empty), "first_seen": first_seen, "last_seen": last_seen,
                       "has_users": roles.get("user") is not None, "query_ids": int(ids)}
            con.execute(
                "INSERT INTO query_logs (log_name, collection_name, source, layout, columns, rows_read, searches, "
                "queries, kept_queries, kept_searches, min_count, min_users, has_users, first_seen, last_seen, "
                "created_at, notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [name, record.get("collection_name"), record["source"], record["layout"],
                 json.dumps(roles.shown()), rows_read, searches, queries, kept_queries, kept_searches,
                 record["min_count"], record["min_users"], summary["has_users"], first_seen, last_seen,
                 now_utc(), json.dumps(record.get("notes", []))])
            con.execute("DROP TABLE _log")
        return summary

    def _delete_log(self, con: duckdb.DuckDBPyConnection, log_name: str) -> None:
        for table in ("query_logs", "query_log_queries", "query_log_ids", "click_logs", "click_stats",
                      "interleaving_logs", "interleaving_results"):
            con.execute(f"DELETE FROM {table} WHERE log_name = ?", [log_name])  # noqa: S608 - columns by position, values bound

    def query_logs(self, collection_name: str | None = None) -> list[dict[str, Any]]:
        """The stored logs, newest first (optionally those of one collection)."""
        sql = ("SELECT l.*, c.events AS click_events, c.pairs AS click_pairs FROM query_logs l "
               "LEFT JOIN click_logs c USING (log_name)")
        params: list[Any] = []
        if collection_name is not None:
            sql += " WHERE l.collection_name = ?"
            params.append(collection_name)
        return self._dicts(sql + " ORDER BY l.created_at DESC, l.log_name", params)

    def query_log(self, log_name: str) -> dict[str, Any]:
        rows = self._dicts("SELECT * FROM query_logs WHERE log_name = ?", [log_name])
        if not rows:
            known = [r["log_name"] for r in self._dicts("SELECT log_name FROM query_logs ORDER BY log_name", [])]
            raise SearchGradeError(f"no query log named {log_name!r}"
                                   + (f" (stored: {', '.join(known)})" if known else
                                      "; import one with `searchgrade queries import LOG`"))
        return rows[0]

    def log_counts(self, log_name: str) -> np.ndarray:
        """The kept queries' search counts by rank (most searched first)."""
        return self._arrays("SELECT searches FROM query_log_queries WHERE log_name = ? ORDER BY rank",
                            [log_name])["searches"]

    def log_queries(self, log_name: str, ranks: Sequence[int]) -> list[dict[str, Any]]:
        """Some queries of a log by rank: rank, text, searches, users, first and last seen."""
        if not ranks:
            return []
        return self._dicts("SELECT rank, text, searches, users, first_seen, last_seen FROM query_log_queries "
                           "WHERE log_name = ? AND list_contains(?, rank) ORDER BY rank",
                           [log_name, [int(r) for r in ranks]])

    def log_rank_range(self, log_name: str, first: int, last: int) -> list[dict[str, Any]]:
        """The queries ranked first..last (inclusive), most searched first."""
        return self._dicts("SELECT rank, text, searches, users, first_seen, last_seen FROM query_log_queries "
                           "WHERE log_name = ? AND rank BETWEEN ? AND ? ORDER BY rank", [log_name, first, last])

    # -- query sets

    def query_set_exists(self, set_name: str) -> bool:
        return bool(self._dicts("SELECT 1 AS x FROM query_sets WHERE set_name = ?", [set_name]))

    def write_query_set(self, record: dict[str, Any], rows: Sequence[tuple], *, replace: bool = False) -> None:
        """A query set and its queries (query_id, text, log_rank, searches, band, weight, stratum,
        fixed), in one transaction."""
        columns = ["set_name", "log_name", "collection_name", "method", "size", "seed", "head_share",
                   "torso_share", "searches", "log_searches", "log_queries", "created_at"]
        with self.transaction() as con:
            if replace:
                con.execute("DELETE FROM query_sets WHERE set_name = ?", [record["set_name"]])
                con.execute("DELETE FROM query_set_queries WHERE set_name = ?", [record["set_name"]])
            con.execute(f"INSERT INTO query_sets ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",  # noqa: S608 - columns by position, values bound
                        [record.get(c) if c != "created_at" else now_utc() for c in columns])
            insert_frame(con, "query_set_queries", [(record["set_name"], *r) for r in rows],
                         ["set_name", "query_id", "text", "log_rank", "searches", "band", "weight", "stratum",
                          "fixed"])

    def query_sets(self, log_name: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM query_sets"
        params: list[Any] = []
        if log_name is not None:
            sql += " WHERE log_name = ?"
            params.append(log_name)
        return self._dicts(sql + " ORDER BY created_at DESC, set_name", params)

    def query_set(self, set_name: str) -> dict[str, Any]:
        rows = self._dicts("SELECT * FROM query_sets WHERE set_name = ?", [set_name])
        if not rows:
            known = [r["set_name"] for r in self._dicts("SELECT set_name FROM query_sets ORDER BY set_name", [])]
            raise SearchGradeError(f"no query set named {set_name!r}"
                                   + (f" (stored: {', '.join(known)})" if known else
                                      "; sample one with `searchgrade queries sample LOG`"))
        return rows[0]

    def query_set_queries(self, set_name: str) -> list[dict[str, Any]]:
        """A set's queries, most searched first: query_id, text, log_rank, searches, band, weight,
        stratum, fixed."""
        return self._dicts("SELECT query_id, text, log_rank, searches, band, weight, stratum, fixed "
                           "FROM query_set_queries WHERE set_name = ? ORDER BY log_rank", [set_name])

    def query_log_ids_count(self, log_name: str) -> int:
        with self.connect() as con:
            return con.execute("SELECT count(*) FROM query_log_ids WHERE log_name = ?", [log_name]).fetchone()[0]

    # -- clicks

    def import_click_events(self, spec: FileSpec, roles: Roles, log_name: str, layout: str) -> dict[str, Any]:
        """Aggregate an events file into impressions and clicks per (log query, document, position),
        replacing the log's click stats, in one transaction; returns the counts."""
        by_id = roles.get("query_id") is not None
        key_sql, key_par = column(spec, roles.get("query_id") if by_id else roles.get("query"))
        a_sql, a_par = column(spec, roles.get("action"))
        d_sql, d_par = column(spec, roles.get("doc_id"))
        p_sql, p_par = column(spec, roles.get("position"))
        source = f"SELECT {key_sql} AS k, {a_sql} AS a, {d_sql} AS d, {p_sql} AS p FROM {relation(spec)}"  # noqa: S608 - columns by position, values bound
        params = [*key_par, *a_par, *d_par, *p_par, str(spec.path)]
        key = "trim(k)" if by_id else _NORMALISED.format(x="k")
        with self._bounded() as con:
            try:
                con.execute(
                    f"CREATE TEMP TABLE _ev AS WITH src AS ({source}) SELECT {key} AS k, lower(trim(a)) AS action, "  # noqa: S608 - columns by position, values bound
                    "trim(d) AS doc_id, try_cast(trim(p) AS DOUBLE) AS position, p FROM src", params)
            except duckdb.Error as exc:
                raise SearchGradeError(f"{spec.path}: cannot be read ({first_line(exc)}); check that it is "
                                       f"{spec.fmt.upper()} throughout") from None
            kinds = dict(con.execute("SELECT action, count(*) FROM _ev GROUP BY action").fetchall())
            events = sum(kinds.values())
            used = "action IN ('click', 'impression')"
            if not kinds.get("impression"):
                found = ", ".join(f"{k} ({n:,})" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])[:6] if k)
                raise SearchGradeError(
                    f"{spec.path}: no impression events (actions: {found or 'none'}); a click model needs "
                    "what was shown as well as what was clicked: log action_name 'impression' with its position")
            bad = con.execute(f"SELECT count(*), any_value(p) FROM _ev WHERE {used} AND (position IS NULL OR "  # noqa: S608 - columns by position, values bound
                              "position < 1 OR position <> floor(position))").fetchone()
            if bad[0]:
                raise SearchGradeError(
                    f"{spec.path}: {bad[0]:,} click or impression events have no position 1, 2, ... in column "
                    f"{roles.shown().get('position', 'position')} (e.g. {bad[1]!r}); positions count from 1")
            empty = con.execute(f"SELECT count(*) FROM _ev WHERE {used} AND (doc_id IS NULL OR doc_id = '' "  # noqa: S608 - columns by position, values bound
                                "OR k IS NULL OR k = '')").fetchone()[0]
            if empty:
                what = "query id" if by_id else "query"
                raise SearchGradeError(f"{spec.path}: {empty:,} click or impression events have no document id "
                                       f"or no {what}; every event names both")
            if by_id:
                con.execute("CREATE TEMP TABLE _keys AS SELECT DISTINCT e.k, i.rank, i.query_id IS NOT NULL AS known "  # noqa: S608 - columns by position, values bound
                            f"FROM (SELECT DISTINCT k FROM _ev WHERE {used}) e LEFT JOIN query_log_ids i "
                            "ON i.log_name = ? AND i.query_id = e.k", [log_name])
                missing = con.execute("SELECT count(*), min(k) FROM _keys WHERE NOT known").fetchone()
                if missing[0]:
                    n_events = con.execute(f"SELECT count(*) FROM _ev JOIN _keys USING (k) WHERE {used} "  # noqa: S608 - columns by position, values bound
                                           "AND NOT known").fetchone()[0]
                    raise SearchGradeError(
                        f"{spec.path}: {n_events:,} events name {missing[0]:,} query ids that are not in log "
                        f"{log_name!r} (e.g. {missing[1]!r}); import the log they belong to first, or name it "
                        "with --log")
            else:
                con.execute("CREATE TEMP TABLE _keys AS SELECT e.k, q.rank, q.rank IS NOT NULL AS known "  # noqa: S608 - columns by position, values bound
                            f"FROM (SELECT DISTINCT k FROM _ev WHERE {used}) e LEFT JOIN query_log_queries q "
                            "ON q.log_name = ? AND q.text = e.k", [log_name])
            skipped = con.execute(f"SELECT count(*) FROM _ev JOIN _keys USING (k) WHERE {used} "  # noqa: S608 - columns by position, values bound
                                  "AND rank IS NULL").fetchone()[0]
            replaced = con.execute("SELECT count(*) FROM click_stats WHERE log_name = ?", [log_name]).fetchone()[0]
            con.execute("DELETE FROM click_stats WHERE log_name = ?", [log_name])
            con.execute("DELETE FROM click_logs WHERE log_name = ?", [log_name])
            con.execute(
                "INSERT INTO click_stats SELECT ?, kk.rank, e.doc_id, CAST(e.position AS INTEGER), "  # noqa: S608 - columns by position, values bound
                "greatest(count(*) FILTER (e.action = 'impression'), count(*) FILTER (e.action = 'click')), "
                f"count(*) FILTER (e.action = 'click') FROM _ev e JOIN _keys kk USING (k) WHERE e.{used} "
                "AND kk.rank IS NOT NULL GROUP BY kk.rank, e.doc_id, CAST(e.position AS INTEGER)", [log_name])
            clicks, impressions, pairs = con.execute(
                "SELECT coalesce(sum(clicks), 0), coalesce(sum(impressions), 0), count(DISTINCT (rank, doc_id)) "
                "FROM click_stats WHERE log_name = ?", [log_name]).fetchone()
            if not pairs:
                raise SearchGradeError(
                    f"{spec.path}: none of its events belongs to a query kept in log {log_name!r} (every one is "
                    "of a query below the privacy floor or not in the log); nothing was stored")
            summary = {"log_name": log_name, "source": str(spec.path), "layout": layout, "events": int(events),
                       "clicks": int(clicks), "impressions": int(impressions), "pairs": int(pairs),
                       "skipped_events": int(skipped), "other_actions": int(events - kinds.get("click", 0)
                                                                          - kinds.get("impression", 0)),
                       "replaced": int(replaced)}
            con.execute("INSERT INTO click_logs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [log_name, str(spec.path), layout, events, clicks, impressions, pairs, skipped, now_utc()])
            con.execute("DROP TABLE _ev")
            con.execute("DROP TABLE _keys")
        return summary

    def click_log(self, log_name: str) -> dict[str, Any] | None:
        rows = self._dicts("SELECT * FROM click_logs WHERE log_name = ?", [log_name])
        return rows[0] if rows else None

    def click_stats(self, log_name: str) -> dict[str, np.ndarray]:
        """A log's click stats as arrays: rank, doc_id, position, impressions, clicks."""
        return self._arrays("SELECT rank, doc_id, position, impressions, clicks FROM click_stats "
                            "WHERE log_name = ? ORDER BY rank, doc_id, position", [log_name])
