"""The dashboard's SQL: aggregates over the long tables, so pages never add up rows in Python.

Reads that feed numpy (per-query values, rankings with their grades) come back column by column
(``_frame``, ``_arrays``), never as one Python object per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from searchgrade.engine.store.connection import StoreConnection, and_equal

if TYPE_CHECKING:
    import pandas as pd


# The run's queries numbered in query id order, its strategies in name order (the row and column
# numbers of the arrays ranked_grades returns), and its grades: filtered to the run before any
# join (DuckDB joins a pre-filtered side much faster).
_NUMBERED = (
    "q AS (SELECT query_id, source_doc_id, (row_number() OVER (ORDER BY query_id) - 1)::INTEGER AS qi "
    "      FROM queries WHERE run_id = $run), "
    "s AS (SELECT strategy, (row_number() OVER (ORDER BY strategy) - 1)::INTEGER AS si "
    "      FROM (SELECT DISTINCT strategy FROM results WHERE run_id = $run)), "
    "g AS (SELECT query_id, doc_id, grade, source FROM grades WHERE run_id = $run) "
)
# One row per result at rank <= k: its ranking (strategy, query), place, grade and whether it is
# the query's source document. ``{place}`` is the 0-based place among the ranking's results.
_RANKED = (
    "SELECT s.si, q.qi, {place} AS pos, coalesce(g.grade, 0)::BIGINT AS grade, "
    "g.grade IS NOT NULL AS known, (g.source IS NOT NULL AND g.grade IS NULL) AS failed, "
    "coalesce(r.doc_id = q.source_doc_id, false) AS is_source "
    "FROM {results} r JOIN q USING (query_id) JOIN s USING (strategy) "
    "LEFT JOIN g ON g.query_id = r.query_id AND g.doc_id = r.doc_id"
)


#: Whether run ? is still complete from the completion at ? (its finished_at): reads computed from
#: a complete run are kept only then. A resume reopens the run (finished_at NULL) and may complete
#: it again before a page that read the old completion saves: that page's reads are then stale.
_SAME_COMPLETION = ("EXISTS (SELECT 1 FROM runs WHERE run_id = ? AND status = 'complete' "
                    "AND finished_at IS NOT DISTINCT FROM ?)")

@dataclass
class RankedRows:
    """Every stored ranking's top k (``ranked_grades``).

    Attributes:
        strategies: The strategies with results, by name.
        query_ids: The run's queries, in id order.
        has_source: Per query: it was written from a source document (generated queries).
        rows: One array entry per result at rank <= k of a query of the run: ``si`` and ``qi``
            (indices into the two lists), ``pos`` (0-based place among the ranking's results, in
            rank order), ``grade`` (0 where none is stored), ``known`` (a grade is stored),
            ``failed`` (a judgment was tried and failed: grade NULL) and ``is_source`` (the
            result is its query's source document).
    """

    strategies: list[str]
    query_ids: list[str]
    has_source: np.ndarray
    rows: dict[str, np.ndarray]


def _contiguous(rows: dict[str, np.ndarray], n_queries: int) -> bool:
    """Whether every ranking's places are 0..m-1 (its stored ranks are 1..m, without a gap)."""
    if not len(rows["pos"]):
        return True
    ranking = rows["si"].astype(np.int64) * n_queries + rows["qi"]
    counts = np.bincount(ranking)
    sums = np.bincount(ranking, weights=rows["pos"])
    # Distinct places (the primary key makes ranks unique) summing to m(m-1)/2 are exactly 0..m-1.
    return bool(rows["pos"].min() >= 0 and np.all(sums == counts * (counts - 1) / 2))


def _sorted_codes(column: Any) -> tuple[list[str], np.ndarray]:
    """A string column (Arrow) as its distinct values in order and each row's index into them."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column.combine_chunks())
    names = encoded.dictionary.to_pylist()
    order = sorted(range(len(names)), key=names.__getitem__)
    place = np.empty(len(names), dtype=np.int64)
    place[order] = np.arange(len(names))
    return [names[i] for i in order], place[encoded.indices.to_numpy(zero_copy_only=False)]


class DashboardReadsMixin(StoreConnection):
    """Aggregates the dashboard's view models read (viewmodels/)."""

    def stored_cutoffs(self, run_id: str) -> list[int]:
        """The cut-offs a run stored metrics at, ascending."""
        rows = self._dicts("SELECT DISTINCT k FROM metric_summary WHERE run_id = ? ORDER BY k", [run_id])
        return [r["k"] for r in rows]

    def query_count(self, run_id: str) -> int:
        return self._dicts("SELECT count(*) AS n FROM queries WHERE run_id = ?", [run_id])[0]["n"]

    def query_type_counts(self, run_id: str) -> dict[str, int]:
        """Query type -> number of the run's queries of that type."""
        rows = self._dicts("SELECT query_type, count(*) AS n FROM queries WHERE run_id = ? "
                           "GROUP BY query_type ORDER BY query_type", [run_id])
        return {r["query_type"]: r["n"] for r in rows}

    def query(self, run_id: str, query_id: str) -> dict[str, Any] | None:
        """One query of a run (None if the run has no such query)."""
        rows = self._dicts("SELECT query_id, text, query_type, source_doc_id FROM queries "
                           "WHERE run_id = ? AND query_id = ?", [run_id, query_id])
        return rows[0] if rows else None

    def metric_frame(self, run_id: str, metric: str, k: int) -> pd.DataFrame:
        """One stored metric per strategy and query: columns strategy, query_id, value."""
        return self._frame(
            "SELECT strategy, query_id, value FROM metric_values WHERE run_id = ? AND metric = ? AND k = ? "
            "ORDER BY strategy, query_id",
            [run_id, metric, k],
        )

    def metric_matrix(self, run_id: str, metric: str, k: int) -> tuple[list[str], list[str], np.ndarray]:
        """One stored metric as a (queries, strategies) array, NaN where a strategy has no value
        for a query: the strategies by name, the queries with a value in id order, the array."""
        with self.connect() as con:
            table = con.sql("SELECT strategy, query_id, value FROM metric_values "
                            "WHERE run_id = ? AND metric = ? AND k = ?", params=[run_id, metric, k]).to_arrow_table()
        strategies, si = _sorted_codes(table.column("strategy"))
        query_ids, qi = _sorted_codes(table.column("query_id"))
        matrix = np.full((len(query_ids), len(strategies)), np.nan)
        matrix[qi, si] = table.column("value").to_numpy()
        return strategies, query_ids, matrix

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

    def query_extremes(self, run_id: str, metric: str, k: int, n: int) -> list[dict[str, Any]]:
        """The best and worst queries by a stored metric's mean over strategies, ranked in SQL.

        Best: the n highest means (ties by query id: means equal to 9 decimals tie, so that the
        order in which a mean's terms were added cannot decide it), at most half of the queries
        (rounded up) so a small run lists each query once; worst: the n lowest among the rest. Rows as
        ``query_metric_means`` plus ``is_best``, best first, then worst, each in its order.
        """
        return self._dicts(
            "WITH m AS (SELECT q.query_id, q.text, q.query_type, avg(v.value) AS mean_value, "
            "  max(v.value) AS max_value, arg_max(v.strategy, v.value) AS best_strategy, "
            "  min(v.value) AS min_value, arg_min(v.strategy, v.value) AS worst_strategy "
            "  FROM metric_values v JOIN queries q ON q.run_id = v.run_id AND q.query_id = v.query_id "
            "  WHERE v.run_id = $run AND v.metric = $metric AND v.k = $k "
            "  GROUP BY q.query_id, q.text, q.query_type), "
            "r AS (SELECT *, row_number() OVER (ORDER BY round(mean_value, 9) DESC, query_id) AS best_rank, "
            "  least($n, (count(*) OVER () + 1) // 2) AS n_best FROM m), "
            "w AS (SELECT *, row_number() OVER (ORDER BY round(mean_value, 9), query_id) AS worst_rank "
            "  FROM r WHERE best_rank > n_best) "
            "SELECT query_id, text, query_type, mean_value, max_value, best_strategy, min_value, "
            "  worst_strategy, true AS is_best, best_rank AS place FROM r WHERE best_rank <= n_best "
            "UNION ALL "
            "SELECT query_id, text, query_type, mean_value, max_value, best_strategy, min_value, "
            "  worst_strategy, false AS is_best, worst_rank AS place FROM w WHERE worst_rank <= $n "
            "ORDER BY is_best DESC, place",
            {"run": run_id, "metric": metric, "k": k, "n": n},
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

    def stored_paired_tests(self, run_id: str, metric: str, k: int) -> str | None:
        """The paired tests remembered for a run at metric@k (JSON text), or None."""
        rows = self._dicts("SELECT tests FROM paired_tests WHERE run_id = ? AND metric = ? AND k = ?",
                           [run_id, metric, k])
        return rows[0]["tests"] if rows else None

    def remember_paired_tests(self, run_id: str, metric: str, k: int, tests: str, *,
                              finished_at: datetime | None) -> None:
        """Keep a run's paired tests at metric@k while it is still the completion they were
        computed from (``_SAME_COMPLETION``), replacing tests an older procedure kept (two pages
        that computed them at once computed the same)."""
        try:
            with self.transaction() as con:
                con.execute("INSERT OR REPLACE INTO paired_tests SELECT ?, ?, ?, ? WHERE " + _SAME_COMPLETION,
                            [run_id, metric, k, tests, run_id, finished_at])
        except duckdb.TransactionException:
            pass  # another thread's insert of the same row won

    def kept_reads(self, run_id: str, parts: Sequence[str] | None = None) -> dict[tuple[str, str], str]:
        """(part, key) -> the JSON text of each read kept for a run (viewmodels/results_cache.py), of
        some parts only or of all."""
        sql = "SELECT part, key, value FROM kept_reads WHERE run_id = ?"
        params: list[Any] = [run_id]
        if parts is not None:
            sql += " AND list_contains(?, part)"
            params.append(list(parts))
        return {(r["part"], r["key"]): r["value"] for r in self._dicts(sql, params)}

    def kept_read(self, run_id: str, part: str, key: str) -> str | None:
        """One kept read's JSON text, or None."""
        rows = self._dicts("SELECT value FROM kept_reads WHERE run_id = ? AND part = ? AND key = ?",
                           [run_id, part, key])
        return rows[0]["value"] if rows else None

    def keep_reads(self, run_id: str, values: dict[tuple[str, str], str], *, finished_at: datetime | None) -> None:
        """Keep reads of a run, (part, key) -> JSON text, while it is still the completion they
        were computed from (``_SAME_COMPLETION``). The first writer wins: two pages that computed
        a read at once computed the same."""
        if not values:
            return
        try:
            with self.transaction() as con:
                con.executemany(
                    "INSERT OR IGNORE INTO kept_reads SELECT ?, ?, ?, ? WHERE " + _SAME_COMPLETION,
                    [[run_id, part, key, value, run_id, finished_at] for (part, key), value in values.items()])
        except duckdb.TransactionException:
            pass  # another thread's insert of the same rows won

    def unretrieved_relevant(self, run_id: str, threshold: int) -> dict[str, Any]:
        """Relevant documents (grade >= threshold) that no strategy retrieved at any stored rank."""
        rows = self._dicts(
            "WITH retrieved AS (SELECT DISTINCT query_id, doc_id FROM results WHERE run_id = $run), "
            "relevant AS (SELECT g.query_id, g.doc_id, r.doc_id IS NULL AS missed FROM grades g "
            "  JOIN queries q ON q.run_id = g.run_id AND q.query_id = g.query_id "
            "  LEFT JOIN retrieved r ON r.query_id = g.query_id AND r.doc_id = g.doc_id "
            "  WHERE g.run_id = $run AND g.grade >= $threshold) "
            "SELECT count(*) AS relevant, count(*) FILTER (WHERE missed) AS never_retrieved, "
            "count(DISTINCT query_id) FILTER (WHERE missed) AS queries_affected FROM relevant",
            {"run": run_id, "threshold": threshold},
        )
        return rows[0]

    def result_strategies(self, run_id: str) -> list[str]:
        """The strategies that have stored results in a run."""
        rows = self._dicts("SELECT DISTINCT strategy FROM results WHERE run_id = ?", [run_id])
        return [r["strategy"] for r in rows]

    def position_means(self, run_id: str, k: int) -> list[dict[str, Any]]:
        """Per strategy and rank up to k: how many queries have a result there, and their mean grade.

        Rows strategy, rank and:

        - ``with_result``: the queries with a result at that rank; ``queries``: the queries the
          strategy answered (the run's, less those it failed on): the others returned fewer;
        - ``mean_grade``: the mean grade of the results at that rank, over the queries that have
          one (``n`` of them: unjudged as 0, failed judgments, ``judge_failed``, left out);
        - ``mean_grade_all``: the grades at that rank summed over every query answered, a missing
          result counting 0 (failed judgments left out of both): its mean over ranks 1..k is mean
          relevance@k when no judgment failed.

        Grades below 0 count 0, as in the metrics. A rank no query reached has no row.
        """
        return self._dicts(
            "WITH g AS (SELECT query_id, doc_id, grade, source FROM grades WHERE run_id = $run), "
            "answered AS (SELECT s.strategy, (SELECT count(*) FROM queries WHERE run_id = $run) "
            "  - coalesce(f.n, 0) AS queries "
            "  FROM (SELECT DISTINCT strategy FROM results WHERE run_id = $run) s "
            "  LEFT JOIN (SELECT strategy, count(*) AS n FROM failed_queries WHERE run_id = $run "
            "             GROUP BY strategy) f USING (strategy)), "
            "ranked AS (SELECT r.strategy, r.rank, greatest(coalesce(g.grade, 0), 0) AS grade, "
            "  (g.source IS NOT NULL AND g.grade IS NULL) AS failed "
            "  FROM results r LEFT JOIN g ON g.query_id = r.query_id AND g.doc_id = r.doc_id "
            "  WHERE r.run_id = $run AND r.rank <= $k) "
            "SELECT r.strategy, r.rank, avg(r.grade) FILTER (WHERE NOT r.failed) AS mean_grade, "
            "count(*) FILTER (WHERE NOT r.failed) AS n, count(*) FILTER (WHERE r.failed) AS judge_failed, "
            "count(*) AS with_result, a.queries, "
            "coalesce(sum(r.grade) FILTER (WHERE NOT r.failed), 0)::DOUBLE "
            "  / nullif(a.queries - count(*) FILTER (WHERE r.failed), 0) AS mean_grade_all "
            "FROM ranked r JOIN answered a USING (strategy) "
            "GROUP BY r.strategy, r.rank, a.queries ORDER BY r.strategy, r.rank",
            {"run": run_id, "k": k},
        )

    def ranked_doc_ids(self, run_id: str, k: int) -> list[dict[str, Any]]:
        """Per strategy and query: the doc ids of the top k in rank order."""
        return self._dicts(
            "SELECT strategy, query_id, list(doc_id ORDER BY rank) AS doc_ids FROM results "
            "WHERE run_id = ? AND rank <= ? GROUP BY strategy, query_id ORDER BY strategy, query_id",
            [run_id, k],
        )

    def ranked_grades(self, run_id: str, k: int) -> RankedRows:
        """Every stored ranking's top k with each result's grade, as arrays for vectorised metrics."""
        params = {"run": run_id, "k": k}
        with self.connect() as con:
            strategies = [r[0] for r in con.execute(
                "SELECT DISTINCT strategy FROM results WHERE run_id = ? ORDER BY strategy", [run_id]).fetchall()]
            queries = con.execute("SELECT query_id, source_doc_id IS NOT NULL AS has_source FROM queries "
                                  "WHERE run_id = ? ORDER BY query_id", [run_id]).fetchnumpy()
            rows = con.execute("WITH " + _NUMBERED + _RANKED.format(  # noqa: S608 - constant fragments, values bound
                place="r.rank::INTEGER - 1",
                results="(SELECT * FROM results WHERE run_id = $run AND rank <= $k)"), params).fetchnumpy()
            if not _contiguous(rows, len(queries["query_id"])):
                # Ranks with gaps (1, 2, 5): places are counted in rank order, as a ranked list reads.
                rows = con.execute("WITH " + _NUMBERED + _RANKED.format(  # noqa: S608 - constant fragments, values bound
                    place="(row_number() OVER (PARTITION BY r.strategy, r.query_id ORDER BY r.rank) - 1)::INTEGER",
                    results="(SELECT * FROM results WHERE run_id = $run AND rank <= $k)"), params).fetchnumpy()
        return RankedRows(strategies, [str(q) for q in queries["query_id"]], np.asarray(queries["has_source"]),
                          {name: np.asarray(values) for name, values in rows.items()})

    def pool_grades(self, run_id: str) -> dict[str, np.ndarray]:
        """Every stored grade of the run's queries (failed judgments left out): arrays ``qi`` (the
        query's index in query id order, as in ranked_grades) and ``grade``."""
        return self._arrays(
            "WITH q AS (SELECT query_id, (row_number() OVER (ORDER BY query_id) - 1)::INTEGER AS qi "
            "  FROM queries WHERE run_id = $run) "
            "SELECT q.qi, g.grade::BIGINT AS grade FROM grades g JOIN q USING (query_id) "
            "WHERE g.run_id = $run AND g.grade IS NOT NULL",
            {"run": run_id},
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

    def query_table(self, run_id: str) -> pd.DataFrame:
        """The run's queries in id order: query_id, text, query_type, and ``repeated`` (another
        query of the run has the same text)."""
        return self._frame(
            "SELECT query_id, text, query_type, count(*) OVER (PARTITION BY text) > 1 AS repeated "
            "FROM queries WHERE run_id = ? ORDER BY query_id",
            [run_id],
        )

    def trend(self, metric: str, k: int, collection_name: str | None = None) -> list[dict[str, Any]]:
        """One metric's summary across complete runs, oldest first (from run_summary alone)."""
        sql = ("SELECT run_id, name, created_at, collection_name, strategy, value, ci_low, ci_high, n "
               "FROM run_summary WHERE metric = ? AND k = ?")
        params: list[Any] = [metric, k]
        sql = and_equal(sql, params, {"collection_name": collection_name})
        return self._dicts(sql + " ORDER BY created_at, run_id, strategy", params)

    def trend_cutoffs(self) -> list[int]:
        """Cut-offs stored by at least one complete run."""
        return [r["k"] for r in self._dicts("SELECT DISTINCT k FROM run_summary ORDER BY k", [])]
