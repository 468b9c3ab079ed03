"""A run's contents: its queries, ranked results, grades, documents and metrics, written and read.

Writes take the connection of the caller's transaction (``Store.transaction``), so a run's
contents land all together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import duckdb

from searchgrade.engine.store.connection import StoreConnection, and_equal, insert_frame


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
        passages = [(run_id, strategy, qid, doc_id, p.index, p.start, p.end)
                    for qid, h in zip(query_ids, hits, strict=True)
                    for doc_id, p in (getattr(h, "passages", None) or {}).items()]
        insert_frame(con, "result_passages", passages,
                     ["run_id", "strategy", "query_id", "doc_id", "chunk", "start_char", "end_char"])

    def write_grades(self, con: duckdb.DuckDBPyConnection, run_id: str, grades: Iterable[Any]) -> None:
        rows = [
            (run_id, g.query_id, g.doc_id, g.grade, g.source, g.model, g.prompt_version, g.reason,
             g.llm_grade if g.llm_grade is not None else (g.grade if g.source == "llm" else None))
            for g in grades
        ]
        insert_frame(con, "grades", rows, ["run_id", "query_id", "doc_id", "grade", "source", "model",
                                           "prompt_version", "reason", "llm_grade"])

    def write_documents(self, con: duckdb.DuckDBPyConnection, run_id: str, documents: Iterable[Any],
                        origin: str | None = None) -> None:
        """Documents shown with the run: the collection's (origin None), or those a strategy's
        replies described that the collection does not hold (origin: that strategy)."""
        rows = [(run_id, d.doc_id, d.title, d.text, origin) for d in documents]
        insert_frame(con, "documents", rows, ["run_id", "doc_id", "title", "text", "origin"])

    def write_search(self, con: duckdb.DuckDBPyConnection, run_id: str, query_ids: Sequence[str],
                     hits: dict[str, Sequence[Any]], failures: dict[str, dict[str, Any]]) -> None:
        """A run's ranked results and failed queries, replacing what it stored before.

        ``hits`` holds per strategy one entry per query id (None where the query failed);
        ``failures`` strategy -> query id -> (error, attempts).
        """
        con.execute("DELETE FROM results WHERE run_id = ?", [run_id])
        con.execute("DELETE FROM result_passages WHERE run_id = ?", [run_id])
        con.execute("DELETE FROM failed_queries WHERE run_id = ?", [run_id])
        # What was kept from the results before (a resume of a complete run retries its failed
        # queries) no longer holds.
        con.execute("DELETE FROM paired_tests WHERE run_id = ?", [run_id])
        con.execute("DELETE FROM kept_reads WHERE run_id = ?", [run_id])
        for strategy, strategy_hits in hits.items():
            pairs = [(qid, h) for qid, h in zip(query_ids, strategy_hits, strict=True) if h is not None]
            self.write_results(con, run_id, strategy, [q for q, _ in pairs], [h for _, h in pairs])
        rows = [(run_id, strategy, qid, f.error, int(f.attempts))
                for strategy, failed in failures.items() for qid, f in failed.items()]
        insert_frame(con, "failed_queries", rows, ["run_id", "strategy", "query_id", "error", "attempts"])

    def failed_queries(self, run_id: str, strategy: str | None = None) -> list[dict[str, Any]]:
        """Queries a strategy could not answer (a backend error): strategy, query, error, attempts."""
        sql = ("SELECT f.strategy, f.query_id, q.text, f.error, f.attempts FROM failed_queries f "
               "LEFT JOIN queries q ON q.run_id = f.run_id AND q.query_id = f.query_id WHERE f.run_id = ?")
        params: list[Any] = [run_id]
        sql = and_equal(sql, params, {"f.strategy": strategy})
        return self._dicts(sql + " ORDER BY f.strategy, f.query_id", params)

    def failed_query_counts(self, run_id: str) -> dict[str, int]:
        """strategy -> how many queries it failed on (strategies without failures are absent)."""
        rows = self._dicts("SELECT strategy, count(*) AS n FROM failed_queries WHERE run_id = ? "
                           "GROUP BY strategy", [run_id])
        return {r["strategy"]: int(r["n"]) for r in rows}

    def stored_hits(self, run_id: str) -> dict[tuple[str, str], Any]:
        """(strategy, query id) -> SearchHits as stored (score, rank, latency), for a resume."""
        from searchgrade.core.records import Passage, ScoredDoc, SearchHits

        rows = self._dicts(
            "SELECT strategy, query_id, list(doc_id ORDER BY rank) AS ids, list(score ORDER BY rank) AS "
            "scores, list(rank ORDER BY rank) AS ranks, max(latency_ms) AS latency_ms FROM results "
            "WHERE run_id = ? GROUP BY strategy, query_id", [run_id])
        passages: dict[tuple[str, str], dict[str, Passage]] = {}
        for r in self._dicts("SELECT strategy, query_id, doc_id, chunk, start_char, end_char FROM result_passages "
                             "WHERE run_id = ?", [run_id]):
            passages.setdefault((r["strategy"], r["query_id"]), {})[r["doc_id"]] = Passage(
                int(r["chunk"]), int(r["start_char"]), int(r["end_char"]))
        return {(r["strategy"], r["query_id"]): SearchHits(
                    [ScoredDoc(d, float(s), int(k)) for d, s, k in zip(r["ids"], r["scores"], r["ranks"],
                                                                      strict=True)],
                    float(r["latency_ms"]) / 1000.0, passages.get((r["strategy"], r["query_id"])))
                for r in rows}

    def passages(self, run_id: str, query_id: str) -> dict[tuple[str, str], dict[str, int]]:
        """(strategy, doc id) -> the chunk a chunked strategy matched the document by for this query:
        {"chunk", "start_char", "end_char"} (a span of the document's text)."""
        rows = self._dicts("SELECT strategy, doc_id, chunk, start_char, end_char FROM result_passages "
                           "WHERE run_id = ? AND query_id = ?", [run_id, query_id])
        return {(r["strategy"], r["doc_id"]): {k: int(r[k]) for k in ("chunk", "start_char", "end_char")}
                for r in rows}

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

    #: What a run's grading and scoring write (its queries and search results are written before).
    #: query_overlap, query_vectors and exact_search (why queries fail) are written with the grades;
    #: run_summary (the Trends rows) is derived from metric_summary, paired_tests (Results' kept
    #: tests) from metric_values, kept_reads (Results' other kept reads) from all of them: all are
    #: cleared with them when a run is graded again.
    GRADED_TABLES = ("grades", "documents", "metric_values", "metric_summary", "query_overlap", "run_summary",
                     "paired_tests", "kept_reads", "pooled_unjudged", "judge_grades", "query_vectors",
                     "exact_search")

    def clear_run_contents(self, con: duckdb.DuckDBPyConnection, run_id: str,
                           tables: Sequence[str] | None = None) -> None:
        """Delete a run's rows from ``tables`` (default: everything it holds)."""
        every = ("queries", "results", "result_passages", "failed_queries", *self.GRADED_TABLES)
        for table in tables if tables is not None else every:
            if table not in every:
                raise ValueError(f"{table!r} is not a run table: use one of {every}")
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])  # noqa: S608 - constant names, values bound

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
        """doc id -> title, text and origin (None: the collection's; else the strategy that described it)."""
        if not doc_ids:
            return {}
        rows = self._dicts(
            "SELECT doc_id, title, text, origin FROM documents WHERE run_id = ? AND list_contains(?, doc_id)",
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
        allowed = {"queries", "results", "failed_queries", "documents", "query_overlap", "pooled_unjudged",
                   "judge_grades", "query_vectors", "exact_search"}
        unknown = set(tables) - allowed
        if unknown:
            raise ValueError(f"cannot copy tables {sorted(unknown)}; allowed: {sorted(allowed)}")
        # A result's matched chunk goes where the result goes.
        for table in [*tables, *(["result_passages"] if "results" in tables else [])]:
            columns = [row[0] for row in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
                [table]).fetchall()]
            rest = [c for c in columns if c != "run_id"]
            # Table and column names come from the allow-list and the catalog, never from input.
            con.execute(f"INSERT INTO {table} (run_id, {', '.join(rest)}) SELECT ?, {', '.join(rest)} "  # noqa: S608 - constant names, values bound
                        f"FROM {table} WHERE run_id = ?", [target_run, source_run])

    def top_lists(self, run_id: str, k: int) -> dict[str, dict[str, list[str]]]:
        """strategy -> query id -> its top ``k`` doc ids in rank order (failed queries absent)."""
        rows = self._dicts(
            "SELECT strategy, query_id, list(doc_id ORDER BY rank) AS ids FROM results "
            "WHERE run_id = ? AND rank <= ? GROUP BY strategy, query_id", [run_id, int(k)])
        out: dict[str, dict[str, list[str]]] = {}
        for r in rows:
            out.setdefault(r["strategy"], {})[r["query_id"]] = list(r["ids"])
        return out
