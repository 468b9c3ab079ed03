"""Incomplete judgments: the pairs a run's qrels mark as pooled but not judged, and the reads the
metrics for incomplete judgments add to a recomputation (engine/run/stored_metrics.py).

A *hole* in a ranking is a result nobody judged: no grade row, a failed judgment (grade NULL), a
negative stored grade, or a pair in ``pooled_unjudged`` (a negative qrels grade, stored as 0 in
``grades`` so that every standard metric counts it as not relevant, as trec_eval does).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import duckdb
import numpy as np

from searchgrade.engine.store.connection import StoreConnection, insert_frame
from searchgrade.engine.store.dashboard import _NUMBERED

#: A result is a hole here (in the pool, not judged): a negative stored grade, or in pooled_unjudged.
_HOLE = "(g.grade < 0 OR h.doc_id IS NOT NULL)"
_POOLED = "h AS (SELECT query_id, doc_id FROM pooled_unjudged WHERE run_id = $run) "


class HolesMixin(StoreConnection):
    """The pooled-but-unjudged pairs of a run, and the hole reads of a recomputation."""

    def write_pooled_unjudged(self, con: duckdb.DuckDBPyConnection, run_id: str,
                              pairs: Iterable[tuple[str, str]]) -> None:
        """Pairs (query_id, doc_id) in the judging pool that were not judged."""
        insert_frame(con, "pooled_unjudged", [(run_id, q, d) for q, d in sorted(set(pairs))],
                     ["run_id", "query_id", "doc_id"])

    def pooled_unjudged(self, run_id: str) -> dict[str, set[str]]:
        """query_id -> the doc ids its qrels mark as pooled but not judged."""
        out: dict[str, set[str]] = {}
        for r in self._dicts("SELECT query_id, doc_id FROM pooled_unjudged WHERE run_id = ?", [run_id]):
            out.setdefault(r["query_id"], set()).add(r["doc_id"])
        return out

    def records_sampling(self, run_id: str) -> bool:
        """Whether the run's judgments mark pooled documents as not judged (what infAP needs)."""
        with self.connect() as con:
            return bool(con.execute(
                "SELECT EXISTS (SELECT 1 FROM pooled_unjudged WHERE run_id = ?) "
                "OR EXISTS (SELECT 1 FROM grades WHERE run_id = ? AND grade < 0)", [run_id, run_id]).fetchone()[0])

    def ranked_holes(self, run_id: str, k: int) -> dict[str, np.ndarray]:
        """The results at rank <= k that are in the pool but not judged: arrays ``si``, ``qi`` and
        ``pos`` numbered as ``ranked_grades`` numbers them (places counted in rank order)."""
        return self._arrays(
            "WITH " + _NUMBERED + ", " + _POOLED + ", "  # noqa: S608 - constant fragments, values bound
            "r AS (SELECT strategy, query_id, doc_id, (row_number() OVER (PARTITION BY strategy, query_id "
            "      ORDER BY rank) - 1)::INTEGER AS pos FROM results WHERE run_id = $run AND rank <= $k) "
            "SELECT s.si, q.qi, r.pos FROM r JOIN q USING (query_id) JOIN s USING (strategy) "
            "LEFT JOIN g ON g.query_id = r.query_id AND g.doc_id = r.doc_id "
            "LEFT JOIN h ON h.query_id = r.query_id AND h.doc_id = r.doc_id WHERE " + _HOLE,
            {"run": run_id, "k": int(k)})

    def pool_nonrelevant(self, run_id: str, threshold: int) -> np.ndarray:
        """Per query (in query id order): its judged grades below the threshold, holes left out."""
        rows = self._arrays(
            "WITH q AS (SELECT query_id, (row_number() OVER (ORDER BY query_id) - 1)::INTEGER AS qi "  # noqa: S608 - constant fragments, values bound
            "  FROM queries WHERE run_id = $run), " + _POOLED + ", "
            "g AS (SELECT query_id, doc_id, grade FROM grades WHERE run_id = $run) "
            "SELECT q.qi, count(*) AS n FROM g JOIN q USING (query_id) "
            "LEFT JOIN h ON h.query_id = g.query_id AND h.doc_id = g.doc_id "
            "WHERE g.grade IS NOT NULL AND NOT " + _HOLE + " AND g.grade < $threshold GROUP BY q.qi",
            {"run": run_id, "threshold": int(threshold)})
        with self.connect() as con:
            n_queries = con.execute("SELECT count(*) FROM queries WHERE run_id = ?", [run_id]).fetchone()[0]
        out = np.zeros(int(n_queries), dtype=np.int64)
        out[np.asarray(rows["qi"], dtype=np.int64)] = np.asarray(rows["n"], dtype=np.int64)
        return out

    def unjudged_in_pool(self, run_id: str, depth: int) -> list[dict[str, Any]]:
        """Every strategy's results at rank <= depth that hold no grade (unjudged, failed, or
        pooled but not judged), with their rank: strategy, query_id, rank, doc_id, failed."""
        return self._dicts(
            "WITH g AS (SELECT query_id, doc_id, grade, source FROM grades WHERE run_id = $run), " + _POOLED +  # noqa: S608 - constant fragments, values bound
            "SELECT r.strategy, r.query_id, r.rank, r.doc_id, (g.source IS NOT NULL AND g.grade IS NULL) AS failed "
            "FROM results r LEFT JOIN g ON g.query_id = r.query_id AND g.doc_id = r.doc_id "
            "LEFT JOIN h ON h.query_id = r.query_id AND h.doc_id = r.doc_id "
            "WHERE r.run_id = $run AND r.rank <= $depth AND (g.grade IS NULL OR " + _HOLE + ") "
            "ORDER BY r.query_id, r.strategy, r.rank",
            {"run": run_id, "depth": int(depth)})
