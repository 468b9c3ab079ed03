"""The dashboard's SQL: aggregates over the long tables, so pages never add up rows in Python."""

from __future__ import annotations

from typing import Any

from searchgrade.engine.store.connection import StoreConnection, and_equal


class DashboardReadsMixin(StoreConnection):
    """Aggregates the dashboard's view models read (engine/report/)."""

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

    def trend(self, metric: str, k: int, collection_name: str | None = None) -> list[dict[str, Any]]:
        """One metric's summary across complete runs, oldest first."""
        sql = (
            "SELECT r.run_id, r.name, r.created_at, r.collection_name, s.strategy, s.value, "
            "s.ci_low, s.ci_high, s.n FROM metric_summary s JOIN runs r USING (run_id) "
            "WHERE r.status = 'complete' AND s.metric = ? AND s.k = ?"
        )
        params: list[Any] = [metric, k]
        sql = and_equal(sql, params, {"r.collection_name": collection_name})
        return self._dicts(sql + " ORDER BY r.created_at, s.strategy", params)
