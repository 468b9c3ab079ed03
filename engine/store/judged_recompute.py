"""Migration 16: stored runs' judged@k, recomputed to divide by k.

Before issue 32, judged@k divided by the results a strategy returned in the top k, so a strategy
that returned 3 judged results scored judged@10 = 1.0 beside columns that count 10 places. It now
divides by k, as P@k and every other figure over the k places do (engine/metrics/judged.py). A
stored value was j / min(k, n) (j judged results, n returned); the new one is j / k, with j read
back from the old value (a small integer: round(old * min(k, n)) is exact) and divided in double
precision as the pipeline divides, so the stored values are the bits a new run would store. Where
a run's values changed, its judged@k means and 95% CIs are made again (the run's own bootstrap
resamples and seed), its run_summary (Trends) follows, and the run gets a note saying so. Every
kept paired test and Results read is cleared, whatever changed: the kept reads hold judged@k, and
the paired tests of every page now take 10,000 resamples (engine/statistics/pairing.py), where
Results and Compare took 5,000. Pages compute them again on first view.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from searchgrade.engine.store.relevance_recompute import finish_recompute, write_summary

NOTE = ("judged@k was recomputed: it now divides by k (a place no result holds is not judged), as P@k "
        "and ir_measures' definition of Judged@k do; before, it divided by the results returned.")

# Per stored judged value: the results the strategy returned for the query (its rows at any rank:
# ranks 1..n), so min(k, n) is the old denominator.
_NEW = """
WITH n AS (SELECT strategy, query_id, count(*) AS n FROM results WHERE run_id = $run GROUP BY strategy, query_id)
SELECT m.strategy, m.query_id, m.k,
       round(m.value * least(m.k, coalesce(n.n, 0)))::DOUBLE / m.k::DOUBLE AS value, m.value AS old
FROM metric_values m LEFT JOIN n ON n.strategy = m.strategy AND n.query_id = m.query_id
WHERE m.run_id = $run AND m.metric = 'judged'
"""


def recompute_run(con: duckdb.DuckDBPyConnection, run: dict[str, Any]) -> bool:
    """Recompute one run's judged@k and its summary; True when anything changed."""
    run_id = run["run_id"]
    con.execute("CREATE OR REPLACE TEMP TABLE _judged AS " + _NEW, {"run": run_id})
    try:
        if not con.execute("SELECT count(*) FROM _judged WHERE value <> old").fetchone()[0]:
            return False
        con.execute("UPDATE metric_values SET value = j.value FROM _judged j WHERE metric_values.run_id = $run "
                    "AND metric_values.metric = 'judged' AND metric_values.strategy = j.strategy "
                    "AND metric_values.query_id = j.query_id AND metric_values.k = j.k", {"run": run_id})
        if con.execute("SELECT count(*) FROM metric_summary WHERE run_id = ? AND metric = 'judged'",
                       [run_id]).fetchone()[0]:
            columns = con.execute("SELECT strategy, 'judged' AS metric, k, value FROM _judged "
                                  "ORDER BY strategy, metric, k, query_id").fetchnumpy()
            write_summary(con, run_id, columns, json.loads(run["config"] or "{}"), ("judged",))
    finally:
        con.execute("DROP TABLE IF EXISTS _judged")
    finish_recompute(con, run, run_id, NOTE)
    return True


def judged_over_k(con: duckdb.DuckDBPyConnection) -> None:
    """Migration 16 (see the module): every stored run's judged@k recomputed, kept tests and reads
    cleared."""
    cur = con.execute("SELECT run_id, status, config, notes FROM runs WHERE run_id IN "
                      "(SELECT DISTINCT run_id FROM metric_values WHERE metric = 'judged') ORDER BY run_id")
    names = [d[0] for d in cur.description]
    for row in cur.fetchall():
        recompute_run(con, dict(zip(names, row, strict=True)))
    con.execute("DELETE FROM paired_tests")
    con.execute("DELETE FROM kept_reads")
