"""Migration 9: stored runs' mean relevance and relevance shares, recomputed to divide by k.

Before issue 22 these divided by the results a strategy returned, so a short list was rewarded
(one result graded 3 scored 3.00 at k = 10). They now divide by the k places, a place no result
holds counting 0 / not relevant (engine/metrics/relevance.py), a failed judgment's place left out
(engine/run/scoring.py). The new values are computed in SQL from each run's stored results and
grades, exactly as the pipeline computes them (small integers divided in double precision: the
same bits), for every (strategy, query, cut-off) the run stored; where a run's values changed,
its metric_summary rows of these metrics get the new means and 95% CIs (the run's own bootstrap
resamples and seed, over its queries in id order), its run_summary (Trends) follows, and the run
gets a note saying so. Every kept paired test and Results read is cleared (the statistics changed
too, and the kept reads hold these values): pages compute them again on first view.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from searchgrade.engine.store.run_summary import write_run_summary

#: The metrics that divide by the k places (engine/metrics/relevance.py).
RELEVANCE_METRICS = ("mean_relevance", "pct_highly_relevant", "pct_relevant", "pct_not_relevant")
#: The grade from which a result is highly relevant (engine.metrics.relevance.HIGHLY_RELEVANT; not
#: imported: a migration keeps the meaning it had when it was written).
HIGHLY_RELEVANT = 3
NOTE = ("Mean relevance and the relevance shares were recomputed: they now divide by k (a missing "
        "result counts 0, not relevant), as Precision@k does; before, a strategy that returned "
        "fewer than k results was divided by what it returned.")

# Per (strategy, query, cut-off) the run stored (the keys of its DCG rows: one per query a
# strategy answered, empty rankings included), the k places' grades: a failed judgment (a grade
# row whose grade is NULL) leaves its place out, an unjudged result is 0, a negative grade is 0.
# A ranking's places are counted in rank order (ranks with gaps: 1, 2, 5 are places 1, 2, 3).
_VALUES = """
WITH keys AS (SELECT strategy, query_id, k FROM metric_values WHERE run_id = $run AND metric = 'dcg'),
g AS (SELECT query_id, doc_id, grade, source FROM grades WHERE run_id = $run),
placed AS (
    SELECT r.strategy, r.query_id,
           row_number() OVER (PARTITION BY r.strategy, r.query_id ORDER BY r.rank) AS place,
           greatest(coalesce(g.grade, 0), 0) AS grade,
           (g.source IS NOT NULL AND g.grade IS NULL) AS failed
    FROM results r LEFT JOIN g ON g.query_id = r.query_id AND g.doc_id = r.doc_id
    WHERE r.run_id = $run),
counted AS (
    SELECT keys.strategy, keys.query_id, keys.k,
           keys.k - count(p.place) FILTER (WHERE p.failed) AS places,
           coalesce(sum(p.grade) FILTER (WHERE NOT p.failed), 0) AS total,
           count(p.place) FILTER (WHERE NOT p.failed AND p.grade >= $high) AS high,
           count(p.place) FILTER (WHERE NOT p.failed AND p.grade >= $threshold) AS relevant
    FROM keys LEFT JOIN placed p
      ON p.strategy = keys.strategy AND p.query_id = keys.query_id AND p.place <= keys.k
    GROUP BY keys.strategy, keys.query_id, keys.k)
SELECT strategy, query_id, metric, k, value FROM (
    SELECT strategy, query_id, k, 'mean_relevance' AS metric, total::DOUBLE / places::DOUBLE AS value
      FROM counted WHERE places > 0
    UNION ALL SELECT strategy, query_id, k, 'pct_highly_relevant', high::DOUBLE / places::DOUBLE
      FROM counted WHERE places > 0
    UNION ALL SELECT strategy, query_id, k, 'pct_relevant', relevant::DOUBLE / places::DOUBLE
      FROM counted WHERE places > 0
    UNION ALL SELECT strategy, query_id, k, 'pct_not_relevant', (places - relevant)::DOUBLE / places::DOUBLE
      FROM counted WHERE places > 0)
"""


def relevance_values(con: duckdb.DuckDBPyConnection, run_id: str, threshold: int) -> list[tuple]:
    """A run's mean relevance and shares over the k places, from its stored results and grades:
    rows (strategy, query_id, metric, k, value), by metric, k, strategy and query id."""
    return con.execute(_VALUES + _ORDER, _params(run_id, threshold)).fetchall()


_ORDER = " ORDER BY metric, k, strategy, query_id"
_STORED = ("SELECT strategy, query_id, metric, k, value FROM metric_values WHERE run_id = $run "
           "AND list_contains($metrics, metric)")


def _params(run_id: str, threshold: int) -> dict[str, Any]:
    return {"run": run_id, "threshold": threshold, "high": HIGHLY_RELEVANT}


def recompute_run(con: duckdb.DuckDBPyConnection, run: dict[str, Any]) -> bool:
    """Recompute one run's relevance metrics and their summary; True when anything changed."""
    run_id = run["run_id"]
    con.execute("CREATE OR REPLACE TEMP TABLE _relevance AS " + _VALUES, _params(run_id, run["threshold"]))
    try:
        both = {"run": run_id, "metrics": list(RELEVANCE_METRICS)}
        changed = con.execute(
            "SELECT EXISTS (SELECT * FROM _relevance EXCEPT ALL " + _STORED + ") "  # noqa: S608 - constant fragments, values bound
            "OR EXISTS (" + _STORED + " EXCEPT ALL SELECT * FROM _relevance)", both).fetchone()[0]
        if not changed:
            return False
        con.execute("DELETE FROM metric_values WHERE run_id = $run AND list_contains($metrics, metric)", both)
        con.execute("INSERT INTO metric_values SELECT $run, strategy, query_id, metric, k, value FROM _relevance",
                    {"run": run_id})
        if con.execute("SELECT count(*) FROM metric_summary WHERE run_id = $run AND list_contains($metrics, metric)",
                       both).fetchone()[0]:
            columns = con.execute("SELECT strategy, metric, k, value FROM _relevance "
                                  "ORDER BY strategy, metric, k, query_id").fetchnumpy()
            write_summary(con, run_id, columns, json.loads(run["config"] or "{}"))
    finally:
        con.execute("DROP TABLE IF EXISTS _relevance")
    finish_recompute(con, run, run_id, NOTE)
    return True


def finish_recompute(con: duckdb.DuckDBPyConnection, run: dict[str, Any], run_id: str, note: str) -> None:
    """After a run's figures are recomputed: its run summary rebuilt (a complete run's) and ``note``
    added to its notes once."""
    if run["status"] == "complete":
        write_run_summary(con, run_id)
    notes = json.loads(run["notes"] or "[]")
    if note not in notes:
        con.execute("UPDATE runs SET notes = ? WHERE run_id = ?", [json.dumps([*notes, note]), run_id])


def write_summary(con: duckdb.DuckDBPyConnection, run_id: str, columns: dict[str, Any],
                  config: dict[str, Any], metrics: tuple[str, ...] = RELEVANCE_METRICS) -> None:
    """Some metrics' means and 95% CIs, as engine.run.scoring.summarise makes them, from the
    values by (strategy, metric, k) and then query id (migration 9's relevance metrics; migration
    16's judged@k, engine/store/judged_recompute.py)."""
    import numpy as np

    from searchgrade.engine.statistics.bootstrap import bootstrap_cis

    keys = list(zip(columns["strategy"], columns["metric"], columns["k"], strict=True))
    starts = [i for i in range(len(keys)) if i == 0 or keys[i] != keys[i - 1]]
    groups = np.split(np.asarray(columns["value"], dtype=float), starts[1:])
    intervals = bootstrap_cis(groups, n_resamples=int(config.get("n_bootstrap", 10_000)),
                              seed=int(config.get("seed", 0)))
    con.execute("DELETE FROM metric_summary WHERE run_id = ? AND list_contains(?, metric)",
                [run_id, list(metrics)])
    con.executemany("INSERT INTO metric_summary VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(run_id, str(keys[i][0]), str(keys[i][1]), int(keys[i][2]), ci.mean, ci.low, ci.high, len(group))
                     for i, group, ci in zip(starts, groups, intervals, strict=True)])


def divide_by_k(con: duckdb.DuckDBPyConnection) -> None:
    """Migration 9 (see the module): every stored run recomputed, kept tests and reads cleared."""
    cur = con.execute("SELECT run_id, status, threshold, config, notes FROM runs WHERE run_id IN "
                      "(SELECT DISTINCT run_id FROM metric_values) ORDER BY run_id")
    names = [d[0] for d in cur.description]
    for row in cur.fetchall():
        recompute_run(con, dict(zip(names, row, strict=True)))
    con.execute("DELETE FROM paired_tests")
    con.execute("DELETE FROM kept_reads")
