"""What click judgments cover, and team-draft interleaving results: the SQL.

Coverage is each strategy's share of its top k that the click log judges (a stored grade whose
source is the clicks): per query, the top k's results graded by clicks over k, averaged over the
queries the strategy answered. Interleaving results are kept per (log query, system a, system b):
the searches each system's clicks won, the ties and every interleaved search, read from the file
with DuckDB and stored in one transaction (engine/clicks/interleaving_log.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from searchgrade.core.records import SearchGradeError, first_line
from searchgrade.engine.store.connection import StoreConnection, now_utc
from searchgrade.engine.store.traffic import _NORMALISED, column, relation

if TYPE_CHECKING:
    from searchgrade.engine.traffic.files import FileSpec, Roles

#: The stored grades that come from the clicks (engine/run/clicks.py writes this source).
CLICK_SOURCE = "clicks"

_COVERAGE = ("SELECT r.strategy, r.query_id, "
             "count(*) FILTER (WHERE g.source = $source AND g.grade IS NOT NULL) / $k::DOUBLE AS coverage "
             "FROM results r LEFT JOIN grades g ON g.run_id = r.run_id AND g.query_id = r.query_id "
             "AND g.doc_id = r.doc_id WHERE r.run_id = $run AND r.rank <= $k GROUP BY r.strategy, r.query_id")


class ClicksMixin(StoreConnection):
    """Click coverage of a run's rankings; interleaving results of a query log."""

    def click_coverage(self, run_id: str, k: int, source: str = CLICK_SOURCE) -> dict[str, float]:
        """strategy -> the mean share of its top k graded by clicks (see the module); another
        ``source`` ("llm": the judge filling the holes) gives that source's share the same way."""
        rows = self._dicts(f"SELECT strategy, avg(coverage) AS coverage FROM ({_COVERAGE}) GROUP BY strategy",  # noqa: S608 - constant fragments, values bound
                           {"run": run_id, "k": int(k), "source": source})
        return {r["strategy"]: float(r["coverage"]) for r in rows}

    def click_coverage_per_query(self, run_id: str, k: int) -> list[dict[str, Any]]:
        """strategy, query_id, coverage: each ranking's share of its top k graded by clicks."""
        return self._dicts(_COVERAGE + " ORDER BY r.strategy, r.query_id",
                           {"run": run_id, "k": int(k), "source": CLICK_SOURCE})

    # -- team-draft interleaving

    def import_interleaving(self, spec: FileSpec, roles: Roles, log_name: str) -> dict[str, Any]:
        """Aggregate an interleaving file into wins per (log query, system a, system b), replacing
        the log's interleaving results, in one transaction; returns the counts."""
        by_id = roles.get("query_id") is not None
        key_sql, key_par = column(spec, roles.get("query_id") if by_id else roles.get("query"))
        parts = [column(spec, roles.get(role)) for role in ("system_a", "system_b", "clicks_a", "clicks_b")]
        source = (f"SELECT {key_sql} AS k, {parts[0][0]} AS a, {parts[1][0]} AS b, {parts[2][0]} AS ca, "  # noqa: S608 - columns by position, values bound
                  f"{parts[3][0]} AS cb FROM {relation(spec)}")
        params = [*key_par, *(p for _, par in parts for p in par), str(spec.path)]
        key = "trim(k)" if by_id else _NORMALISED.format(x="k")
        with self._bounded() as con:
            try:
                con.execute(f"CREATE TEMP TABLE _il AS WITH src AS ({source}) SELECT {key} AS k, trim(a) AS a, "  # noqa: S608 - columns by position, values bound
                            "trim(b) AS b, try_cast(trim(ca) AS DOUBLE) AS ca, try_cast(trim(cb) AS DOUBLE) AS cb, "
                            "ca AS ca_raw, cb AS cb_raw FROM src", params)
            except duckdb.Error as exc:
                raise SearchGradeError(f"{spec.path}: cannot be read ({first_line(exc)}); check that it is "
                                       f"{spec.fmt.upper()} throughout") from None
            rows = con.execute("SELECT count(*) FROM _il").fetchone()[0]
            bad = con.execute("SELECT count(*), any_value(coalesce(ca_raw, '') || ' / ' || coalesce(cb_raw, '')) "
                              "FROM _il WHERE ca IS NULL OR cb IS NULL OR ca < 0 OR cb < 0 "
                              "OR ca <> floor(ca) OR cb <> floor(cb)").fetchone()
            if bad[0]:
                raise SearchGradeError(f"{spec.path}: {bad[0]:,} rows have click counts that are not whole numbers "
                                       f">= 0 (e.g. {bad[1]!r}); each row is one interleaved search with the clicks "
                                       "credited to each system")
            empty = con.execute("SELECT count(*) FROM _il WHERE k IS NULL OR k = '' OR a IS NULL OR a = '' "
                                "OR b IS NULL OR b = '' OR a = b").fetchone()[0]
            if empty:
                raise SearchGradeError(f"{spec.path}: {empty:,} rows lack a query or a system, or name the same "
                                       "system twice; each row names the query and the two systems interleaved")
            if by_id:
                con.execute("CREATE TEMP TABLE _ik AS SELECT e.k, i.rank FROM (SELECT DISTINCT k FROM _il) e "
                            "LEFT JOIN query_log_ids i ON i.log_name = ? AND i.query_id = e.k", [log_name])
            else:
                con.execute("CREATE TEMP TABLE _ik AS SELECT e.k, q.rank FROM (SELECT DISTINCT k FROM _il) e "
                            "LEFT JOIN query_log_queries q ON q.log_name = ? AND q.text = e.k", [log_name])
            skipped = con.execute("SELECT count(*) FROM _il JOIN _ik USING (k) WHERE rank IS NULL").fetchone()[0]
            replaced = con.execute("SELECT count(*) FROM interleaving_results WHERE log_name = ?",
                                   [log_name]).fetchone()[0]
            con.execute("DELETE FROM interleaving_results WHERE log_name = ?", [log_name])
            con.execute("DELETE FROM interleaving_logs WHERE log_name = ?", [log_name])
            # A pair of systems is kept in one order (the smaller name first), its wins swapped to match.
            con.execute(
                "INSERT INTO interleaving_results SELECT ?, kk.rank, least(a, b), greatest(a, b), "
                "count(*) FILTER (WHERE (ca > cb) = (a < b) AND ca <> cb), "
                "count(*) FILTER (WHERE (ca < cb) = (a < b) AND ca <> cb), "
                "count(*) FILTER (WHERE ca = cb AND ca > 0), count(*) "
                "FROM _il JOIN _ik kk USING (k) WHERE kk.rank IS NOT NULL GROUP BY kk.rank, least(a, b), greatest(a, b)",
                [log_name])
            searches, queries = con.execute("SELECT coalesce(sum(searches), 0), count(DISTINCT rank) FROM "
                                            "interleaving_results WHERE log_name = ?", [log_name]).fetchone()
            if not searches:
                raise SearchGradeError(f"{spec.path}: none of its rows is of a query kept in log {log_name!r}; "
                                       "nothing was stored")
            con.execute("INSERT INTO interleaving_logs VALUES (?, ?, ?, ?, ?)",
                        [log_name, str(spec.path), int(searches), int(skipped), now_utc()])
            con.execute("DROP TABLE _il")
            con.execute("DROP TABLE _ik")
        return {"rows": int(rows), "searches": int(searches), "queries": int(queries), "skipped": int(skipped),
                "replaced": int(replaced)}

    def interleaving_log(self, log_name: str) -> dict[str, Any] | None:
        rows = self._dicts("SELECT * FROM interleaving_logs WHERE log_name = ?", [log_name])
        return rows[0] if rows else None

    def interleaving_results(self, log_name: str, ranks: Sequence[int] | None = None) -> list[dict[str, Any]]:
        """rank, system_a, system_b, wins_a, wins_b, ties, searches per log query and pair of systems
        (of the queries at ``ranks`` only, when given)."""
        sql = ("SELECT rank, system_a, system_b, wins_a, wins_b, ties, searches FROM interleaving_results "
               "WHERE log_name = ?")
        params: list[Any] = [log_name]
        if ranks is not None:
            sql += " AND list_contains(?, rank)"
            params.append([int(r) for r in ranks])
        return self._dicts(sql + " ORDER BY system_a, system_b, rank", params)
