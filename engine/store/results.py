"""A run's contents: its queries, ranked results, grades, documents and metrics, written and read.

Writes take the connection of the caller's transaction (``Store.transaction``), so a run's
contents land all together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import duckdb

from engine.store.connection import StoreConnection, and_equal, insert_frame


class ResultsMixin(StoreConnection):
    """Writes and plain reads of what a run holds."""

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
        insert_frame(con, "results", rows,
                      ["run_id", "strategy", "query_id", "rank", "doc_id", "score", "latency_ms"])

    def write_grades(self, con: duckdb.DuckDBPyConnection, run_id: str, grades: Iterable[Any]) -> None:
        rows = [
            (run_id, g.query_id, g.doc_id, g.grade, g.source, g.model, g.prompt_version, g.reason,
             g.llm_grade if g.llm_grade is not None else (g.grade if g.source == "llm" else None))
            for g in grades
        ]
        insert_frame(con, "grades", rows, ["run_id", "query_id", "doc_id", "grade", "source", "model",
                                           "prompt_version", "reason", "llm_grade"])

    def write_documents(self, con: duckdb.DuckDBPyConnection, run_id: str, documents: Iterable[Any]) -> None:
        rows = [(run_id, d.doc_id, d.title, d.text) for d in documents]
        insert_frame(con, "documents", rows, ["run_id", "doc_id", "title", "text"])

    def write_metric_values(self, con: duckdb.DuckDBPyConnection, run_id: str,
                            rows: Iterable[tuple[str, str, str, int, float]]) -> None:
        """Rows of (strategy, query_id, metric, k, value)."""
        insert_frame(con, "metric_values", [(run_id, *r) for r in rows],
                      ["run_id", "strategy", "query_id", "metric", "k", "value"])

    def write_metric_summary(self, con: duckdb.DuckDBPyConnection, run_id: str,
                             rows: Iterable[tuple[str, str, int, float, float, float, int]]) -> None:
        """Rows of (strategy, metric, k, value, ci_low, ci_high, n)."""
        insert_frame(con, "metric_summary", [(run_id, *r) for r in rows],
                      ["run_id", "strategy", "metric", "k", "value", "ci_low", "ci_high", "n"])

    def clear_run_contents(self, con: duckdb.DuckDBPyConnection, run_id: str) -> None:
        for table in ("queries", "results", "grades", "documents", "metric_values", "metric_summary",
                      "query_overlap", "run_summary"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])

    def metric_summary(self, run_id: str, k: int | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT strategy, metric, k, value, ci_low, ci_high, n FROM metric_summary "
               "WHERE run_id = ?")
        params: list[Any] = [run_id]
        sql = and_equal(sql, params, {"k": k})
        return self._dicts(sql + " ORDER BY metric, k, strategy", params)

    def metric_values(self, run_id: str, metric: str | None = None, k: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT strategy, query_id, metric, k, value FROM metric_values WHERE run_id = ?"
        params: list[Any] = [run_id]
        sql = and_equal(sql, params, {"metric": metric, "k": k})
        return self._dicts(sql + " ORDER BY strategy, query_id", params)

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
        sql = and_equal(sql, params, {"r.strategy": strategy, "r.query_id": query_id})
        return self._dicts(sql + " ORDER BY r.strategy, r.query_id, r.rank", params)

    def grades(self, run_id: str, query_id: str | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT query_id, doc_id, grade, source, model, prompt_version, reason, llm_grade FROM grades "
               "WHERE run_id = ?")
        params: list[Any] = [run_id]
        sql = and_equal(sql, params, {"query_id": query_id})
        return self._dicts(sql + " ORDER BY query_id, doc_id", params)

    def grades_of_queries(self, run_id: str, query_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The grades of some queries of a run (as ``grades``)."""
        if not query_ids:
            return []
        return self._dicts(
            "SELECT query_id, doc_id, grade, source, model, prompt_version, reason, llm_grade FROM grades "
            "WHERE run_id = ? AND list_contains(?, query_id) ORDER BY query_id, doc_id",
            [run_id, list(query_ids)])

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

    def copy_run_contents(self, con: duckdb.DuckDBPyConnection, source_run: str, target_run: str,
                          tables: Sequence[str]) -> None:
        """Copy a run's rows of some tables to another run id (re-scoring keeps the search results)."""
        allowed = {"queries", "results", "documents", "query_overlap"}
        unknown = set(tables) - allowed
        if unknown:
            raise ValueError(f"cannot copy tables {sorted(unknown)}; allowed: {sorted(allowed)}")
        for table in tables:
            columns = [row[0] for row in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
                [table]).fetchall()]
            rest = [c for c in columns if c != "run_id"]
            # Table and column names come from the allow-list and the catalog, never from input.
            con.execute(f"INSERT INTO {table} (run_id, {', '.join(rest)}) SELECT ?, {', '.join(rest)} "
                        f"FROM {table} WHERE run_id = ?", [target_run, source_run])
