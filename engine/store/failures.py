"""Why queries fail (engine/failures/): the failed top 1s of a run with the evidence of their causes,
the run's query vectors, and the exact search of the same vectors for the failed queries.

The one definition of a failed top 1 is ``_TOP1`` below; every read that lists or counts failed
queries goes through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from searchgrade.engine.store.connection import StoreConnection, insert_frame

if TYPE_CHECKING:
    import pandas as pd

#: Each strategy's top 1 per query, and what it is (``top1``): ``relevant`` (graded at or above the
#: threshold), ``judged_not_relevant`` (graded below it), ``unjudged`` (no grade, or a negative
#: qrels grade: in the judging pool but not judged, stored as 0 and listed in pooled_unjudged) or
#: ``judge_failed`` (the LLM judgment failed: nobody knows its grade). A query *fails* for a
#: strategy when its top 1 is judged not relevant or unjudged (docs/metrics.md#why-queries-fail).
#: ``g`` holds the run's grades with ``hole`` (pooled, not judged). Parameters $run, $threshold.
_TOP1 = (
    "g AS (SELECT g.query_id, g.doc_id, g.grade, g.source, g.llm_grade, p.doc_id IS NOT NULL AS hole "
    "  FROM grades g LEFT JOIN pooled_unjudged p "
    "  ON p.run_id = g.run_id AND p.query_id = g.query_id AND p.doc_id = g.doc_id WHERE g.run_id = $run), "
    "top1 AS (SELECT r.strategy, r.query_id, r.doc_id, g.grade, g.source, g.llm_grade, "
    "  CASE WHEN g.source IS NULL OR g.hole THEN 'unjudged' WHEN g.grade IS NULL THEN 'judge_failed' "
    "       WHEN g.grade >= $threshold THEN 'relevant' ELSE 'judged_not_relevant' END AS top1 "
    "  FROM results r LEFT JOIN g ON g.query_id = r.query_id AND g.doc_id = r.doc_id "
    "  WHERE r.run_id = $run AND r.rank = 1) "
)
#: The failed top 1s: one row per failed (strategy, query).
FAILED = "top1 IN ('judged_not_relevant', 'unjudged')"

# The evidence of every cause, per failed (strategy, query): what the labels know of the query
# (relevant and judged documents), the strategy's best relevant rank, the other strategies whose
# top 1 is relevant, the best rank any strategy gives a relevant document, and the relevant
# document exact search finds that the approximate index and the strategy's own list miss.
_EVIDENCE = (
    "WITH " + _TOP1 + ", "  # noqa: S608 - constant fragments, values bound
    "relevant AS (SELECT query_id, doc_id FROM g WHERE grade >= $threshold AND NOT hole), "
    "known AS (SELECT query_id, count(*) FILTER (WHERE grade >= $threshold AND NOT hole) AS relevant_known, "
    "  count(*) FILTER (WHERE grade IS NOT NULL AND NOT hole) AS judged_known FROM g GROUP BY query_id), "
    "hits AS (SELECT r.strategy, r.query_id, r.rank, r.doc_id FROM results r "
    "  JOIN relevant USING (query_id, doc_id) WHERE r.run_id = $run), "
    "best AS (SELECT strategy, query_id, min(rank) AS best_rank, arg_min(doc_id, rank) AS best_doc "
    "  FROM hits GROUP BY strategy, query_id), "
    "anywhere AS (SELECT query_id, min(rank) AS any_rank FROM hits GROUP BY query_id), "
    "firsts AS (SELECT query_id, list(strategy ORDER BY strategy) AS firsts FROM top1 "
    "  WHERE top1 = 'relevant' GROUP BY query_id), "
    "missed AS (SELECT e.query_id, e.rank, e.doc_id FROM exact_search e JOIN relevant USING (query_id, doc_id) "
    "  WHERE e.run_id = $run AND NOT e.in_index), "
    "failed AS (SELECT * FROM top1 WHERE " + FAILED + "), "
    "lost AS (SELECT f.strategy, m.query_id, min(m.rank) AS lost_rank, arg_min(m.doc_id, m.rank) AS lost_doc "
    "  FROM failed f JOIN missed m USING (query_id) "
    "  WHERE NOT EXISTS (SELECT 1 FROM results r WHERE r.run_id = $run AND r.strategy = f.strategy "
    "                    AND r.query_id = m.query_id AND r.doc_id = m.doc_id) "
    "  GROUP BY f.strategy, m.query_id) "
    "SELECT f.strategy, f.query_id, q.text, q.query_type, f.doc_id AS top_doc, f.top1 AS kind, "
    "  f.grade, f.source, f.llm_grade, "
    "  coalesce(k.relevant_known, 0) AS relevant_known, coalesce(k.judged_known, 0) AS judged_known, "
    "  b.best_rank, b.best_doc, "
    "  list_filter(coalesce(o.firsts, []::VARCHAR[]), lambda s: s != f.strategy) AS first_by, "
    "  a.any_rank, l.lost_rank, l.lost_doc "
    "FROM failed f JOIN queries q ON q.run_id = $run AND q.query_id = f.query_id "
    "LEFT JOIN known k ON k.query_id = f.query_id "
    "LEFT JOIN best b ON b.strategy = f.strategy AND b.query_id = f.query_id "
    "LEFT JOIN firsts o ON o.query_id = f.query_id "
    "LEFT JOIN anywhere a ON a.query_id = f.query_id "
    "LEFT JOIN lost l ON l.strategy = f.strategy AND l.query_id = f.query_id "
    "ORDER BY f.strategy, f.query_id"
)

# Every strategy's top 1 of the queries whose top 1 from $strategy failed, with its title, grade and
# whether its judgment failed: one row per query and strategy ("what came back instead").
_FAILED_TOP1 = (
    "WITH " + _TOP1 + ", "  # noqa: S608 - constant fragments, values bound
    "failed AS (SELECT query_id FROM top1 WHERE strategy = $strategy AND " + FAILED + ") "
    "SELECT q.query_id, q.text, q.query_type, t.strategy, t.doc_id, d.title, t.grade, "
    "t.top1 = 'judge_failed' AS judge_failed, t.top1 = 'unjudged' AS unjudged "
    "FROM failed f JOIN queries q ON q.run_id = $run AND q.query_id = f.query_id "
    "JOIN top1 t ON t.query_id = f.query_id "
    "LEFT JOIN documents d ON d.run_id = $run AND d.doc_id = t.doc_id"
)


class FailuresMixin(StoreConnection):
    """A run's failed top 1s and their causes' evidence; its query vectors and exact search."""

    def failure_evidence(self, run_id: str, threshold: int) -> pd.DataFrame:
        """One row per failed (strategy, query) with the evidence of every cause (``_EVIDENCE``):
        strategy, query_id, text, query_type, top_doc, kind, grade, source, llm_grade,
        relevant_known, judged_known, best_rank, best_doc, first_by (other strategies whose top 1
        is relevant), any_rank (the best rank of a relevant document in any strategy's list),
        lost_rank, lost_doc (the best relevant
        document exact search finds that the approximate index and this strategy's list miss)."""
        return self._frame(_EVIDENCE, {"run": run_id, "threshold": threshold})

    def top1_counts(self, run_id: str, threshold: int) -> list[dict[str, Any]]:
        """Per strategy with results: queries answered with a top 1 (``n``) and how many of their
        top 1s are relevant, judged not relevant, unjudged and judge_failed."""
        return self._dicts(
            "WITH " + _TOP1 + "SELECT strategy, count(*) AS n, "
            "count(*) FILTER (WHERE top1 = 'relevant') AS relevant, "
            "count(*) FILTER (WHERE top1 = 'judged_not_relevant') AS judged_not_relevant, "
            "count(*) FILTER (WHERE top1 = 'unjudged') AS unjudged, "
            "count(*) FILTER (WHERE top1 = 'judge_failed') AS judge_failed "
            "FROM top1 GROUP BY strategy ORDER BY strategy",
            {"run": run_id, "threshold": threshold})

    def top1_kinds(self, run_id: str, threshold: int) -> list[dict[str, Any]]:
        """Every strategy's top 1 per query and what it is (``_TOP1``): strategy, query_id, top1."""
        return self._dicts("WITH " + _TOP1 + "SELECT strategy, query_id, top1 FROM top1 "  # noqa: S608 - constant fragments, values bound
                           "ORDER BY strategy, query_id", {"run": run_id, "threshold": threshold})

    def failed_top1(self, run_id: str, strategy: str, threshold: int) -> list[dict[str, Any]]:
        """Queries whose top 1 from ``strategy`` failed (``FAILED``), with every strategy's top 1.

        Long rows (query, strategy, top-1 doc, title, grade, judge_failed, unjudged).
        """
        return self._dicts(_FAILED_TOP1 + " ORDER BY query_id, strategy",
                           {"run": run_id, "strategy": strategy, "threshold": threshold})

    def failed_top1_cells(self, run_id: str, strategy: str, threshold: int) -> pd.DataFrame:
        """``failed_top1`` with each top 1 written as the failed-queries table shows it, in SQL
        (a 10,000-query run has tens of thousands of cells): columns query_id, text, query_type,
        strategy, cell = "[grade] title (doc id)", "[unjudged] ...", "[judge failed] ...", the
        title cut to 80 characters and the doc id standing in for a missing one."""
        return self._frame(
            "SELECT query_id, text, query_type, strategy, "
            "'[' || CASE WHEN judge_failed THEN 'judge failed' WHEN unjudged THEN 'unjudged' "
            "  ELSE CAST(CAST(grade AS BIGINT) AS VARCHAR) END "
            "|| '] ' || substring(coalesce(nullif(title, ''), doc_id), 1, 80) || ' (' || doc_id || ')' AS cell "
            "FROM (" + _FAILED_TOP1 + ") ORDER BY query_id, strategy",
            {"run": run_id, "strategy": strategy, "threshold": threshold},
        )

    def write_query_vectors(self, con: duckdb.DuckDBPyConnection, run_id: str, query_ids: Sequence[str],
                            vectors: np.ndarray) -> None:
        """The run's query vectors, one row per query (a float32 list)."""
        import pyarrow as pa

        if not len(query_ids):
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1]).cast(
            pa.list_(pa.float32()))
        table = pa.table({"run_id": [run_id] * len(query_ids), "query_id": list(query_ids), "vector": column})
        con.register("_insert_query_vectors", table)
        try:
            con.execute("INSERT INTO query_vectors SELECT run_id, query_id, vector FROM _insert_query_vectors")
        finally:
            con.unregister("_insert_query_vectors")

    def query_vectors(self, run_id: str) -> tuple[list[str], np.ndarray]:
        """The run's query ids (in id order) and their vectors (one row each); an empty array
        when the run stored none."""
        with self.connect() as con:
            table = con.sql("SELECT query_id, vector FROM query_vectors WHERE run_id = ? ORDER BY query_id",
                            params=[run_id]).to_arrow_table()
        ids = [str(q) for q in table.column("query_id").to_pylist()]
        if not ids:
            return [], np.zeros((0, 0), dtype=np.float32)
        flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        return ids, np.asarray(flat, dtype=np.float32).reshape(len(ids), -1)

    def write_exact_search(self, con: duckdb.DuckDBPyConnection, run_id: str,
                           rows: Iterable[tuple[str, int, str, bool]]) -> None:
        """Rows of (query_id, rank, doc_id, in_index): the exact top list of a query searched."""
        insert_frame(con, "exact_search", [(run_id, *r) for r in rows],
                     ["run_id", "query_id", "rank", "doc_id", "in_index"])
