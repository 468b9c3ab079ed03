"""Each judge's grades of a run's pairs, the grades asked again, and calibrated prompts (migration 17).

- ``judge_grades``: every judge's raw 0-3 grade per pair (NULL: the judgment failed), by judge
  name; written with the run's grades, in the same transaction (engine/run/stages.py), so a
  resumed run rewrites them with the rest.
- ``judge_repeats``: the grades ``searchgrade judges RUN --repeat N`` asked again, repetition
  1..N per pair, each stored as it comes (an endpoint failing part-way keeps what was judged).
- ``judge_calibrations``: a judge prompt carrying people's rated examples, its cross-fitted report
  and whether it was kept (engine/judges/calibration.py).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import duckdb

from searchgrade.engine.store.connection import StoreConnection, insert_frame, now_utc

#: One judge's grade of one pair: (judge, query_id, doc_id, grade or None, reason, prompt_version).
JudgeGradeRow = tuple[str, str, str, int | None, str | None, str | None]


class JudgesMixin(StoreConnection):
    """The judge_grades, judge_repeats and judge_calibrations tables."""

    def write_judge_grades(self, con: duckdb.DuckDBPyConnection, run_id: str, rows: Iterable[JudgeGradeRow]) -> None:
        insert_frame(con, "judge_grades", [(run_id, *row) for row in rows],
                     ["run_id", "judge", "query_id", "doc_id", "grade", "reason", "prompt_version"])

    def judge_grades(self, run_id: str, judges: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """A run's per-judge grades (every judge's, or those named), by judge, query and document."""
        sql = "SELECT judge, query_id, doc_id, grade, reason, prompt_version FROM judge_grades WHERE run_id = ?"
        params: list[Any] = [run_id]
        if judges is not None:
            sql += " AND list_contains(?, judge)"
            params.append(list(judges))
        return self._dicts(sql + " ORDER BY judge, query_id, doc_id", params)

    def judge_grade_counts(self, run_id: str) -> dict[str, int]:
        """Judge name -> the pairs it has a row for (graded or failed), in name order."""
        rows = self._dicts("SELECT judge, count(*) AS n FROM judge_grades WHERE run_id = ? GROUP BY judge "
                           "ORDER BY judge", [run_id])
        return {r["judge"]: int(r["n"]) for r in rows}

    def add_judge_repeats(self, run_id: str, rows: Iterable[tuple[str, str, str, int, int | None]]) -> None:
        """Store re-asked grades: (judge, query_id, doc_id, repetition, grade or None); a repetition
        already stored keeps its first grade."""
        created = now_utc()
        values = [(run_id, *row, created) for row in rows]
        if not values:
            return
        with self.transaction() as con:
            con.executemany("INSERT INTO judge_repeats VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", values)

    def judge_repeats(self, run_id: str) -> list[dict[str, Any]]:
        """Every re-asked grade of a run: judge, query_id, doc_id, repetition, grade."""
        return self._dicts("SELECT judge, query_id, doc_id, repetition, grade FROM judge_repeats WHERE run_id = ? "
                           "ORDER BY judge, query_id, doc_id, repetition", [run_id])

    def add_judge_calibration(self, *, run_id: str, judge: str, prompt_name: str, prompt_version: str,
                              prompt_text: str, report: dict[str, Any], kept: bool) -> str:
        calibration_id = uuid.uuid4().hex[:16]
        with self.transaction() as con:
            con.execute("INSERT INTO judge_calibrations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [calibration_id, run_id, judge, prompt_name, prompt_version, prompt_text,
                         json.dumps(report), kept, now_utc()])
        return calibration_id

    def judge_calibrations(self, run_id: str) -> list[dict[str, Any]]:
        """A run's calibrations, newest first, with their reports parsed."""
        rows = self._dicts("SELECT calibration_id, judge, prompt_name, prompt_version, prompt_text, report, kept, "
                           "created_at FROM judge_calibrations WHERE run_id = ? ORDER BY created_at DESC", [run_id])
        for r in rows:
            r["report"] = json.loads(r["report"])
        return rows

    def judges_version(self, run_id: str) -> str:
        """Changes whenever what the judges' report reads of a run changes (repeats, calibrations):
        a key for caches of the report."""
        row = self._dicts("SELECT (SELECT count(*) FROM judge_repeats WHERE run_id = $1) AS repeats, "
                          "(SELECT count(*) FROM judge_calibrations WHERE run_id = $1) AS calibrations",
                          [run_id])[0]
        return f"{row['repeats']}:{row['calibrations']}"
