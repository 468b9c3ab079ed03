"""The run store: one DuckDB file holding every run, its queries, results, grades and metrics.

All SQL of the project lives here. Connections are short-lived (one per operation) so that
another process (the CLI while the app is open, say) can write between them: DuckDB lets only
one process hold a database file open for writing. Inside one process, DuckDB shares one
database instance between connections, so threads are safe with a connection each.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from engine.types import SearchGradeError

DB_FILENAME = "searchgrade.duckdb"

RUN_STATUSES = ("running", "complete", "failed", "interrupted")

# Numbered, forward-only. Never edit an applied migration: add the next one.
MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY,
            name VARCHAR NOT NULL,
            collection_name VARCHAR NOT NULL,
            collection_path VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL,
            finished_at TIMESTAMP,
            status VARCHAR NOT NULL,
            stage VARCHAR,
            mode VARCHAR NOT NULL,
            label_source VARCHAR NOT NULL,
            grade_min INTEGER,
            grade_max INTEGER,
            threshold INTEGER NOT NULL,
            k INTEGER NOT NULL,
            depth INTEGER NOT NULL,
            config JSON NOT NULL,
            timings JSON,
            skipped JSON,
            stats JSON,
            notes JSON,
            error VARCHAR,
            pid INTEGER,
            host VARCHAR
        );
        CREATE TABLE queries (
            run_id VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            text VARCHAR NOT NULL,
            query_type VARCHAR NOT NULL,
            source_doc_id VARCHAR,
            PRIMARY KEY (run_id, query_id)
        );
        CREATE TABLE results (
            run_id VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            rank INTEGER NOT NULL,
            doc_id VARCHAR NOT NULL,
            score DOUBLE NOT NULL,
            latency_ms DOUBLE NOT NULL,
            PRIMARY KEY (run_id, strategy, query_id, rank)
        );
        CREATE TABLE grades (
            run_id VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            doc_id VARCHAR NOT NULL,
            grade INTEGER,
            source VARCHAR NOT NULL,
            model VARCHAR,
            prompt_version VARCHAR,
            reason VARCHAR,
            PRIMARY KEY (run_id, query_id, doc_id)
        );
        CREATE TABLE documents (
            run_id VARCHAR NOT NULL,
            doc_id VARCHAR NOT NULL,
            title VARCHAR NOT NULL,
            text VARCHAR NOT NULL,
            PRIMARY KEY (run_id, doc_id)
        );
        CREATE TABLE metric_values (
            run_id VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            query_id VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            k INTEGER NOT NULL,
            value DOUBLE NOT NULL,
            PRIMARY KEY (run_id, strategy, query_id, metric, k)
        );
        CREATE TABLE metric_summary (
            run_id VARCHAR NOT NULL,
            strategy VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            k INTEGER NOT NULL,
            value DOUBLE NOT NULL,
            ci_low DOUBLE NOT NULL,
            ci_high DOUBLE NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (run_id, strategy, metric, k)
        );
        """,
    ),
    (
        2,
        """
        CREATE TABLE llm_cache (
            kind VARCHAR NOT NULL,
            cache_key VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            prompt_version VARCHAR NOT NULL,
            payload JSON NOT NULL,
            created_at TIMESTAMP NOT NULL,
            PRIMARY KEY (kind, cache_key)
        );
        CREATE TABLE llm_usage (
            run_id VARCHAR NOT NULL,
            stage VARCHAR NOT NULL,
            requests BIGINT NOT NULL DEFAULT 0,
            ok BIGINT NOT NULL DEFAULT 0,
            failures BIGINT NOT NULL DEFAULT 0,
            invalid_replies BIGINT NOT NULL DEFAULT 0,
            retries BIGINT NOT NULL DEFAULT 0,
            cache_hits BIGINT NOT NULL DEFAULT 0,
            prompt_tokens BIGINT NOT NULL DEFAULT 0,
            completion_tokens BIGINT NOT NULL DEFAULT 0,
            latency_s DOUBLE NOT NULL DEFAULT 0,
            PRIMARY KEY (run_id, stage)
        );
        """,
    ),
)


@dataclass
class RunRecord:
    run_id: str
    name: str
    collection_name: str
    collection_path: str
    created_at: datetime
    finished_at: datetime | None
    status: str
    stage: str | None
    mode: str
    label_source: str
    grade_min: int | None
    grade_max: int | None
    threshold: int
    k: int
    depth: int
    config: dict[str, Any]
    timings: dict[str, float]
    skipped: dict[str, str]
    stats: dict[str, Any]
    notes: list[str]
    error: str | None

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["created_at"] = self.created_at.isoformat()
        d["finished_at"] = self.finished_at.isoformat() if self.finished_at else None
        return d


_RUN_COLUMNS = (
    "run_id, name, collection_name, collection_path, created_at, finished_at, status, stage, "
    "mode, label_source, grade_min, grade_max, threshold, k, depth, config, timings, skipped, "
    "stats, notes, error"
)
_JSON_DEFAULTS = {"config": {}, "timings": {}, "skipped": {}, "stats": {}, "notes": []}


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    """The DuckDB run store at ``data_dir/searchgrade.duckdb``."""

    def __init__(self, data_dir: str | Path, *, lock_timeout_s: float = 30.0):
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / DB_FILENAME
        self.lock_timeout_s = lock_timeout_s
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SearchGradeError(
                f"cannot create the data directory {self.data_dir}: {exc.strerror}; "
                "pass a writable --data-dir or set SEARCHGRADE_HOME"
            ) from None
        with self.connect() as con:
            self._migrate(con)

    # -- connections -------------------------------------------------------------------------

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A fresh connection, retried while another process holds the file's write lock."""
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                con = duckdb.connect(str(self.path))
                break
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise SearchGradeError(
                        f"cannot open the run store {self.path}: {str(exc).splitlines()[0]}; "
                        "check the file, or point --data-dir elsewhere"
                    ) from None
                if time.monotonic() > deadline:
                    raise SearchGradeError(
                        f"the run store {self.path} is locked by another process for more than "
                        f"{self.lock_timeout_s:.0f} s; stop the other searchgrade process or use "
                        "another --data-dir"
                    ) from None
                time.sleep(0.2)
            except duckdb.Error as exc:
                raise SearchGradeError(
                    f"cannot open the run store {self.path}: {str(exc).splitlines()[0]}; "
                    "it may not be a searchgrade DuckDB file: point --data-dir elsewhere"
                ) from None
        try:
            yield con
        finally:
            con.close()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection inside one transaction: all of it lands, or none of it."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> None:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP)"
        )
        applied = {row[0] for row in con.execute("SELECT version FROM schema_version").fetchall()}
        for version, sql in MIGRATIONS:
            if version in applied:
                continue
            con.execute("BEGIN TRANSACTION")
            try:
                for statement in sql.split(";"):
                    if statement.strip():
                        con.execute(statement)
                con.execute("INSERT INTO schema_version VALUES (?, ?)", [version, _now()])
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def schema_version(self) -> int:
        with self.connect() as con:
            return con.execute("SELECT max(version) FROM schema_version").fetchone()[0]

    # -- runs --------------------------------------------------------------------------------

    def create_run(
        self,
        *,
        name: str,
        collection_name: str,
        collection_path: str,
        mode: str,
        label_source: str,
        grade_min: int | None,
        grade_max: int | None,
        threshold: int,
        k: int,
        depth: int,
        config: dict[str, Any],
        notes: Sequence[str] = (),
        run_id: str | None = None,
    ) -> str:
        run_id = run_id or new_run_id()
        with self.connect() as con:
            con.execute(
                "INSERT INTO runs (run_id, name, collection_name, collection_path, created_at, status, "
                "stage, mode, label_source, grade_min, grade_max, threshold, k, depth, config, timings, "
                "skipped, stats, notes, pid, host) "
                "VALUES (?, ?, ?, ?, ?, 'running', 'starting', ?, ?, ?, ?, ?, ?, ?, ?, '{}', '{}', '{}', ?, ?, ?)",
                [
                    run_id, name, collection_name, collection_path, _now(), mode, label_source,
                    grade_min, grade_max, threshold, k, depth, json.dumps(config),
                    json.dumps(list(notes)), os.getpid(), socket.gethostname(),
                ],
            )
        return run_id

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Set some columns of a run; dicts and lists are stored as JSON."""
        allowed = {"stage", "timings", "skipped", "stats", "notes", "status", "error", "threshold",
                   "grade_min", "grade_max", "config"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update run columns {sorted(unknown)}; allowed: {sorted(allowed)}")
        # Column names come from the fixed allow-list above, never from user input.
        assignments = ", ".join(f"{column} = ?" for column in fields)
        values = [json.dumps(v) if isinstance(v, (dict, list)) else v for v in fields.values()]
        with self.connect() as con:
            con.execute(f"UPDATE runs SET {assignments} WHERE run_id = ?", [*values, run_id])

    def finish_run(self, run_id: str, status: str, error: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"status {status!r} is not one of {RUN_STATUSES}")
        with self.connect() as con:
            con.execute(
                "UPDATE runs SET status = ?, error = ?, finished_at = ?, stage = ? WHERE run_id = ?",
                [status, error, _now(), "done" if status == "complete" else None, run_id],
            )

    def mark_stale_runs(self) -> int:
        """Mark as interrupted the runs still 'running' whose process on this host has died.

        A process killed with SIGKILL cannot mark its own run; the next process to look does.
        """
        host = socket.gethostname()
        with self.connect() as con:
            rows = con.execute(
                "SELECT run_id, pid FROM runs WHERE status = 'running' AND host = ?", [host]
            ).fetchall()
            stale = [run_id for run_id, pid in rows if pid is None or not _pid_alive(pid)]
            for run_id in stale:
                con.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ?, "
                    "error = coalesce(error, 'the process running it stopped (killed or crashed)') "
                    "WHERE run_id = ?",
                    [_now(), run_id],
                )
        return len(stale)

    def get_run(self, run_id: str) -> RunRecord:
        with self.connect() as con:
            row = con.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", [run_id]).fetchone()
            if row is None:
                # Accept an unambiguous prefix, as git does for commits.
                rows = con.execute(
                    f"SELECT {_RUN_COLUMNS} FROM runs WHERE starts_with(run_id, ?)", [run_id]
                ).fetchall()
                if len(rows) == 1:
                    row = rows[0]
        if row is None:
            raise SearchGradeError(
                f"no run {run_id!r} in {self.path}; list the runs with `searchgrade runs`"
            )
        return _run_record(row)

    def list_runs(self, collection_name: str | None = None) -> list[RunRecord]:
        """Runs, newest first."""
        sql = f"SELECT {_RUN_COLUMNS} FROM runs"
        params: list[Any] = []
        if collection_name is not None:
            sql += " WHERE collection_name = ?"
            params.append(collection_name)
        sql += " ORDER BY created_at DESC, run_id DESC"
        with self.connect() as con:
            rows = con.execute(sql, params).fetchall()
        return [_run_record(row) for row in rows]

    # -- run contents ------------------------------------------------------------------------

    def write_queries(self, con: duckdb.DuckDBPyConnection, run_id: str, queries: Iterable[Any]) -> None:
        rows = [(run_id, q.query_id, q.text, q.query_type, q.source_doc_id) for q in queries]
        if rows:
            con.executemany("INSERT INTO queries VALUES (?, ?, ?, ?, ?)", rows)

    def write_results(
        self,
        con: duckdb.DuckDBPyConnection,
        run_id: str,
        strategy: str,
        query_ids: Sequence[str],
        hits: Sequence[Any],
    ) -> None:
        rows = [
            (run_id, strategy, qid, d.rank, d.doc_id, float(d.score), h.latency_s * 1000.0)
            for qid, h in zip(query_ids, hits, strict=True)
            for d in h.docs
        ]
        _insert_frame(con, "results", rows,
                      ["run_id", "strategy", "query_id", "rank", "doc_id", "score", "latency_ms"])

    def write_grades(self, con: duckdb.DuckDBPyConnection, run_id: str, grades: Iterable[Any]) -> None:
        rows = [
            (run_id, g.query_id, g.doc_id, g.grade, g.source, g.model, g.prompt_version, g.reason)
            for g in grades
        ]
        _insert_frame(con, "grades", rows,
                      ["run_id", "query_id", "doc_id", "grade", "source", "model", "prompt_version", "reason"])

    def write_documents(self, con: duckdb.DuckDBPyConnection, run_id: str, documents: Iterable[Any]) -> None:
        rows = [(run_id, d.doc_id, d.title, d.text) for d in documents]
        _insert_frame(con, "documents", rows, ["run_id", "doc_id", "title", "text"])

    def write_metric_values(self, con: duckdb.DuckDBPyConnection, run_id: str,
                            rows: Iterable[tuple[str, str, str, int, float]]) -> None:
        """Rows of (strategy, query_id, metric, k, value)."""
        _insert_frame(con, "metric_values", [(run_id, *r) for r in rows],
                      ["run_id", "strategy", "query_id", "metric", "k", "value"])

    def write_metric_summary(self, con: duckdb.DuckDBPyConnection, run_id: str,
                             rows: Iterable[tuple[str, str, int, float, float, float, int]]) -> None:
        """Rows of (strategy, metric, k, value, ci_low, ci_high, n)."""
        _insert_frame(con, "metric_summary", [(run_id, *r) for r in rows],
                      ["run_id", "strategy", "metric", "k", "value", "ci_low", "ci_high", "n"])

    def clear_run_contents(self, con: duckdb.DuckDBPyConnection, run_id: str) -> None:
        for table in ("queries", "results", "grades", "documents", "metric_values", "metric_summary"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])

    # -- reads -------------------------------------------------------------------------------

    def metric_summary(self, run_id: str, k: int | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT strategy, metric, k, value, ci_low, ci_high, n FROM metric_summary "
               "WHERE run_id = ?")
        params: list[Any] = [run_id]
        if k is not None:
            sql += " AND k = ?"
            params.append(k)
        sql += " ORDER BY metric, k, strategy"
        return self._dicts(sql, params)

    def metric_values(self, run_id: str, metric: str | None = None, k: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT strategy, query_id, metric, k, value FROM metric_values WHERE run_id = ?"
        params: list[Any] = [run_id]
        if metric is not None:
            sql += " AND metric = ?"
            params.append(metric)
        if k is not None:
            sql += " AND k = ?"
            params.append(k)
        sql += " ORDER BY strategy, query_id"
        return self._dicts(sql, params)

    def queries(self, run_id: str) -> list[dict[str, Any]]:
        return self._dicts(
            "SELECT query_id, text, query_type, source_doc_id FROM queries WHERE run_id = ? ORDER BY query_id",
            [run_id],
        )

    def results_with_grades(self, run_id: str, strategy: str | None = None,
                            query_id: str | None = None) -> list[dict[str, Any]]:
        """Results joined with their grades (grade None where unjudged), by strategy, query, rank."""
        sql = (
            "SELECT r.strategy, r.query_id, r.rank, r.doc_id, r.score, r.latency_ms, g.grade, "
            "g.source, g.model, g.prompt_version, g.reason "
            "FROM results r LEFT JOIN grades g "
            "ON g.run_id = r.run_id AND g.query_id = r.query_id AND g.doc_id = r.doc_id "
            "WHERE r.run_id = ?"
        )
        params: list[Any] = [run_id]
        if strategy is not None:
            sql += " AND r.strategy = ?"
            params.append(strategy)
        if query_id is not None:
            sql += " AND r.query_id = ?"
            params.append(query_id)
        sql += " ORDER BY r.strategy, r.query_id, r.rank"
        return self._dicts(sql, params)

    def grades(self, run_id: str, query_id: str | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT query_id, doc_id, grade, source, model, prompt_version, reason FROM grades "
               "WHERE run_id = ?")
        params: list[Any] = [run_id]
        if query_id is not None:
            sql += " AND query_id = ?"
            params.append(query_id)
        return self._dicts(sql + " ORDER BY query_id, doc_id", params)

    def documents(self, run_id: str, doc_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        if not doc_ids:
            return {}
        rows = self._dicts(
            "SELECT doc_id, title, text FROM documents WHERE run_id = ? AND list_contains(?, doc_id)",
            [run_id, list(doc_ids)],
        )
        return {r["doc_id"]: r for r in rows}

    def latency_summary(self, run_id: str) -> list[dict[str, Any]]:
        """Median and p95 search latency per strategy, one value per query."""
        return self._dicts(
            "SELECT strategy, median(latency_ms) AS p50_ms, quantile_cont(latency_ms, 0.95) AS p95_ms, "
            "count(*) AS n FROM (SELECT DISTINCT strategy, query_id, latency_ms FROM results "
            "WHERE run_id = ?) GROUP BY strategy ORDER BY strategy",
            [run_id],
        )

    def trend(self, metric: str, k: int, collection_name: str | None = None) -> list[dict[str, Any]]:
        """One metric's summary across complete runs, oldest first."""
        sql = (
            "SELECT r.run_id, r.name, r.created_at, r.collection_name, s.strategy, s.value, "
            "s.ci_low, s.ci_high, s.n FROM metric_summary s JOIN runs r USING (run_id) "
            "WHERE r.status = 'complete' AND s.metric = ? AND s.k = ?"
        )
        params: list[Any] = [metric, k]
        if collection_name is not None:
            sql += " AND r.collection_name = ?"
            params.append(collection_name)
        return self._dicts(sql + " ORDER BY r.created_at, s.strategy", params)

    def _dicts(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        with self.connect() as con:
            cur = con.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    # -- dashboard reads ---------------------------------------------------------------------

    def query_metric_means(self, run_id: str, metric: str, k: int) -> list[dict[str, Any]]:
        """Per query: the metric's mean, best and worst over strategies, with the query's text."""
        return self._dicts(
            "SELECT q.query_id, q.text, q.query_type, avg(v.value) AS mean_value, "
            "max(v.value) AS max_value, arg_max(v.strategy, v.value) AS best_strategy, "
            "min(v.value) AS min_value, arg_min(v.strategy, v.value) AS worst_strategy, "
            "count(*) AS n_strategies "
            "FROM metric_values v JOIN queries q ON q.run_id = v.run_id AND q.query_id = v.query_id "
            "WHERE v.run_id = ? AND v.metric = ? AND v.k = ? "
            "GROUP BY q.query_id, q.text, q.query_type ORDER BY mean_value, q.query_id",
            [run_id, metric, k],
        )

    def metric_by_query_type(self, run_id: str, metric: str, k: int) -> list[dict[str, Any]]:
        """Mean of one metric per strategy and query type (natural, keyword, qrels)."""
        return self._dicts(
            "SELECT v.strategy, q.query_type, avg(v.value) AS value, count(*) AS n "
            "FROM metric_values v JOIN queries q ON q.run_id = v.run_id AND q.query_id = v.query_id "
            "WHERE v.run_id = ? AND v.metric = ? AND v.k = ? "
            "GROUP BY v.strategy, q.query_type ORDER BY q.query_type, v.strategy",
            [run_id, metric, k],
        )

    def failed_top1(self, run_id: str, strategy: str) -> list[dict[str, Any]]:
        """Queries whose top-1 result from `strategy` is graded 0 or unjudged, with every strategy's top 1.

        Long rows (query, strategy, top-1 doc, title, grade, judge_failed); grade None with
        judge_failed False means unjudged (counts as 0). A top 1 whose judgment failed (a grade row
        with grade NULL) is not a failed query: nobody knows its grade.
        """
        return self._dicts(
            "WITH failed AS (SELECT r.query_id FROM results r LEFT JOIN grades g "
            "  ON g.run_id = r.run_id AND g.query_id = r.query_id AND g.doc_id = r.doc_id "
            "  WHERE r.run_id = ? AND r.strategy = ? AND r.rank = 1 "
            "  AND (g.grade = 0 OR g.source IS NULL)) "
            "SELECT q.query_id, q.text, q.query_type, r.strategy, r.doc_id, d.title, g.grade, "
            "(g.source IS NOT NULL AND g.grade IS NULL) AS judge_failed "
            "FROM failed f JOIN queries q ON q.run_id = ? AND q.query_id = f.query_id "
            "JOIN results r ON r.run_id = ? AND r.query_id = f.query_id AND r.rank = 1 "
            "LEFT JOIN grades g ON g.run_id = r.run_id AND g.query_id = r.query_id AND g.doc_id = r.doc_id "
            "LEFT JOIN documents d ON d.run_id = r.run_id AND d.doc_id = r.doc_id "
            "ORDER BY q.query_id, r.strategy",
            [run_id, strategy, run_id, run_id],
        )

    def failed_top1_counts(self, run_id: str) -> list[dict[str, Any]]:
        """Per strategy: queries whose top 1 is graded 0 or unjudged (failed), unjudged, whose top-1
        judgment failed (judge_failed, not counted as failed), and queries answered."""
        return self._dicts(
            "SELECT r.strategy, count(*) FILTER (WHERE g.grade = 0 OR g.source IS NULL) AS failed, "
            "count(*) FILTER (WHERE g.source IS NULL) AS unjudged, "
            "count(*) FILTER (WHERE g.source IS NOT NULL AND g.grade IS NULL) AS judge_failed, "
            "count(*) AS n "
            "FROM results r LEFT JOIN grades g "
            "ON g.run_id = r.run_id AND g.query_id = r.query_id AND g.doc_id = r.doc_id "
            "WHERE r.run_id = ? AND r.rank = 1 GROUP BY r.strategy ORDER BY r.strategy",
            [run_id],
        )

    def unretrieved_relevant(self, run_id: str, threshold: int) -> dict[str, Any]:
        """Relevant documents (grade >= threshold) that no strategy retrieved at any stored rank."""
        rows = self._dicts(
            "SELECT count(*) AS relevant, "
            "count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM results r WHERE r.run_id = g.run_id "
            "  AND r.query_id = g.query_id AND r.doc_id = g.doc_id)) AS never_retrieved, "
            "count(DISTINCT g.query_id) FILTER (WHERE NOT EXISTS (SELECT 1 FROM results r "
            "  WHERE r.run_id = g.run_id AND r.query_id = g.query_id AND r.doc_id = g.doc_id)) "
            "  AS queries_affected "
            "FROM grades g JOIN queries q ON q.run_id = g.run_id AND q.query_id = g.query_id "
            "WHERE g.run_id = ? AND g.grade >= ?",
            [run_id, threshold],
        )
        return rows[0]

    def result_strategies(self, run_id: str) -> list[str]:
        """The strategies that have stored results in a run."""
        rows = self._dicts("SELECT DISTINCT strategy FROM results WHERE run_id = ?", [run_id])
        return [r["strategy"] for r in rows]

    def paired_metric_values(self, run_a: str, run_b: str, metric: str, k: int) -> list[dict[str, Any]]:
        """One metric per strategy and query for two runs, over the queries (by id) both evaluated."""
        return self._dicts(
            "SELECT a.strategy, a.query_id, qa.text, a.value AS value_a, b.value AS value_b "
            "FROM metric_values a JOIN metric_values b ON b.run_id = ? AND b.strategy = a.strategy "
            "AND b.query_id = a.query_id AND b.metric = a.metric AND b.k = a.k "
            "JOIN queries qa ON qa.run_id = a.run_id AND qa.query_id = a.query_id "
            "WHERE a.run_id = ? AND a.metric = ? AND a.k = ? ORDER BY a.strategy, a.query_id",
            [run_b, run_a, metric, k],
        )

    def position_means(self, run_id: str, k: int) -> list[dict[str, Any]]:
        """Mean grade at each rank per strategy, as the stored mean relevance counts it: unjudged
        results as 0, failed judgments (grade NULL) left out and counted in judge_failed."""
        return self._dicts(
            "SELECT r.strategy, r.rank, "
            "avg(coalesce(g.grade, 0)) FILTER (WHERE g.grade IS NOT NULL OR g.source IS NULL) AS mean_grade, "
            "count(*) FILTER (WHERE g.grade IS NOT NULL OR g.source IS NULL) AS n, "
            "count(*) FILTER (WHERE g.source IS NOT NULL AND g.grade IS NULL) AS judge_failed "
            "FROM results r LEFT JOIN grades g "
            "ON g.run_id = r.run_id AND g.query_id = r.query_id AND g.doc_id = r.doc_id "
            "WHERE r.run_id = ? AND r.rank <= ? GROUP BY r.strategy, r.rank ORDER BY r.strategy, r.rank",
            [run_id, k],
        )

    def ranked_doc_ids(self, run_id: str, k: int) -> list[dict[str, Any]]:
        """Per strategy and query: the doc ids of the top k in rank order."""
        return self._dicts(
            "SELECT strategy, query_id, list(doc_id ORDER BY rank) AS doc_ids FROM results "
            "WHERE run_id = ? AND rank <= ? GROUP BY strategy, query_id ORDER BY strategy, query_id",
            [run_id, k],
        )

    def judge_failures(self, run_id: str) -> list[dict[str, Any]]:
        """Pairs whose LLM judgment failed (grade NULL): query, document and the reason."""
        return self._dicts(
            "SELECT g.query_id, q.text, q.query_type, g.doc_id, d.title, g.model, g.reason "
            "FROM grades g JOIN queries q ON q.run_id = g.run_id AND q.query_id = g.query_id "
            "LEFT JOIN documents d ON d.run_id = g.run_id AND d.doc_id = g.doc_id "
            "WHERE g.run_id = ? AND g.grade IS NULL AND g.source = 'llm' ORDER BY g.query_id, g.doc_id",
            [run_id],
        )

    def source_found_values(self, run_id: str, k: int) -> list[dict[str, Any]]:
        """source found@k per strategy and query with a source document: 1.0 if it is in the top k."""
        return self._dicts(
            "SELECT s.strategy, q.query_id, CASE WHEN EXISTS (SELECT 1 FROM results r "
            "  WHERE r.run_id = q.run_id AND r.strategy = s.strategy AND r.query_id = q.query_id "
            "  AND r.doc_id = q.source_doc_id AND r.rank <= ?) THEN 1.0 ELSE 0.0 END AS value "
            "FROM (SELECT DISTINCT strategy FROM results WHERE run_id = ?) s, queries q "
            "WHERE q.run_id = ? AND q.source_doc_id IS NOT NULL ORDER BY s.strategy, q.query_id",
            [k, run_id, run_id],
        )

    def query_counts(self) -> dict[str, int]:
        """Run id -> number of stored queries (runs without queries are absent)."""
        rows = self._dicts("SELECT run_id, count(*) AS n FROM queries GROUP BY run_id", [])
        return {r["run_id"]: r["n"] for r in rows}

    # -- llm cache ---------------------------------------------------------------------------

    #: Counters of llm_usage, in engine.llm.client.StageUsage order.
    LLM_USAGE_COUNTERS = ("requests", "ok", "failures", "invalid_replies", "retries", "cache_hits",
                          "prompt_tokens", "completion_tokens", "latency_s")

    def llm_cache_get(self, kind: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Cached LLM payloads of one kind ("judge", "querygen") by key; keys not cached are absent."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        import pyarrow as pa

        with self.connect() as con:
            # A join against the keys, not list_contains: the cache grows to many thousand rows.
            con.register("_llm_keys", pa.table({"cache_key": keys}))
            try:
                rows = con.execute(
                    "SELECT c.cache_key, c.payload FROM llm_cache c JOIN _llm_keys k "
                    "ON c.cache_key = k.cache_key WHERE c.kind = ?",
                    [kind],
                ).fetchall()
            finally:
                con.unregister("_llm_keys")
        return {key: json.loads(payload) for key, payload in rows}

    def llm_cache_put(self, kind: str, entries: Iterable[tuple[str, str, str, dict[str, Any]]]) -> None:
        """Cache (key, model, prompt_version, payload) entries; a key already cached keeps its payload."""
        now = _now()
        rows: dict[str, tuple] = {}
        for key, model, prompt_version, payload in entries:
            rows.setdefault(key, (kind, key, model, prompt_version, json.dumps(payload), now))
        if not rows:
            return
        import pyarrow as pa

        columns = ["kind", "cache_key", "model", "prompt_version", "payload", "created_at"]
        arrow = pa.table({c: list(col) for c, col in zip(columns, zip(*rows.values(), strict=True),
                                                          strict=True)})
        with self.connect() as con:
            con.register("_llm_entries", arrow)
            try:
                con.execute(
                    f"INSERT INTO llm_cache ({', '.join(columns)}) SELECT {', '.join(columns)} "
                    "FROM _llm_entries ON CONFLICT DO NOTHING"
                )
            finally:
                con.unregister("_llm_entries")

    def add_llm_usage(self, run_id: str, stage: str, deltas: dict[str, float]) -> None:
        """Add counters (requests, tokens, ...) to a run's LLM accounting for one stage.

        Additive, so a resumed run keeps counting from where the stopped process left off.
        """
        unknown = set(deltas) - set(self.LLM_USAGE_COUNTERS)
        if unknown:
            raise ValueError(f"unknown LLM usage counters {sorted(unknown)}; "
                             f"allowed: {list(self.LLM_USAGE_COUNTERS)}")
        if not deltas:
            return
        # Column names come from the fixed allow-list above, never from user input.
        names = list(deltas)
        updates = ", ".join(f"{n} = llm_usage.{n} + excluded.{n}" for n in names)
        with self.connect() as con:
            con.execute(
                f"INSERT INTO llm_usage (run_id, stage, {', '.join(names)}) "
                f"VALUES (?, ?, {', '.join('?' for _ in names)}) "
                f"ON CONFLICT (run_id, stage) DO UPDATE SET {updates}",
                [run_id, stage, *deltas.values()],
            )

    def llm_usage(self, run_id: str) -> dict[str, dict[str, float]]:
        """A run's LLM accounting: stage -> counter -> value (empty for a run without LLM calls)."""
        rows = self._dicts(
            f"SELECT stage, {', '.join(self.LLM_USAGE_COUNTERS)} FROM llm_usage WHERE run_id = ? "
            "ORDER BY stage",
            [run_id],
        )
        return {r.pop("stage"): r for r in rows}

    # -- resume ------------------------------------------------------------------------------

    def reopen_run(self, run_id: str) -> None:
        """Mark a stopped run 'running' again, owned by this process (`searchgrade resume`).

        Only an interrupted or failed run can be reopened; what it completed stays.
        """
        with self.connect() as con:
            row = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()
            if row is None or row[0] not in ("interrupted", "failed"):
                status = row[0] if row else "missing"
                raise SearchGradeError(
                    f"run {run_id} is {status}; only an interrupted or failed run can be resumed"
                )
            con.execute(
                "UPDATE runs SET status = 'running', stage = 'resuming', error = NULL, "
                "finished_at = NULL, pid = ?, host = ? WHERE run_id = ?",
                [os.getpid(), socket.gethostname(), run_id],
            )

    def run_pid(self, run_id: str) -> int | None:
        """The id of the process that last ran a run (None if unknown)."""
        with self.connect() as con:
            row = con.execute("SELECT pid FROM runs WHERE run_id = ?", [run_id]).fetchone()
        return row[0] if row else None


def new_run_id() -> str:
    """A sortable, unique run id: UTC time to the second, then random hex."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _run_record(row: Sequence[Any]) -> RunRecord:
    names = [c.strip() for c in _RUN_COLUMNS.split(",")]
    values = dict(zip(names, row, strict=True))
    for key, default in _JSON_DEFAULTS.items():
        raw = values[key]
        values[key] = json.loads(raw) if raw else default
    return RunRecord(**values)


def _insert_frame(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple], columns: list[str]) -> None:
    """Bulk insert through an Arrow table: executemany is far slower for tens of thousands of rows."""
    if not rows:
        return
    import pyarrow as pa

    arrow = pa.table({c: list(col) for c, col in zip(columns, zip(*rows, strict=True), strict=True)})
    view = f"_insert_{table}"
    con.register(view, arrow)
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(columns)} FROM {view}")
    finally:
        con.unregister(view)
