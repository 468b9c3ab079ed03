"""A complete run's trend rows (run_summary): what Trends read, one row per strategy, metric and
cut-off, derived from the run's metric summary and its run row."""

from __future__ import annotations

import duckdb


def write_run_summary(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """A complete run's trend rows (run_summary), from its metric summary and its run row."""
    con.execute("DELETE FROM run_summary WHERE run_id = ?", [run_id])
    con.execute(
        "INSERT INTO run_summary SELECT r.run_id, r.collection_name, r.name, r.created_at, s.strategy, "
        "s.metric, s.k, s.value, s.ci_low, s.ci_high, s.n "
        "FROM metric_summary s JOIN runs r USING (run_id) WHERE r.run_id = ?",
        [run_id],
    )
