"""Tuning studies and their trials (migration 14): stored as each trial ends, so a tuning resumes.

A study is one ``searchgrade tune`` of one strategy of one run, identified by ``study_key``: the
run, the strategy, the metric, the space, the seed, the split and the trial budget's shape, so the
same command resumes the same study (its stored trials are told to the sampler again and only the
rest are run) while any change starts a new one. Its report (engine/tuning/tuner.py) is kept
when it completes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store.connection import StoreConnection, now_utc


def study_key(run_id: str, strategy: str, metric: str, space: Any, seed: int, split: Any) -> str:
    """A stable 16-hex-digit id of what a study is (see the module)."""
    payload = json.dumps({"run": run_id, "strategy": strategy, "metric": metric, "space": space, "seed": seed,
                          "split": split}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


class TuningMixin(StoreConnection):
    """The tuning_studies and tuning_trials tables."""

    def open_tuning_study(self, study_id: str, run_id: str, strategy: str, metric: str, space: Any,
                          seed: int, split: Any) -> bool:
        """Create the study unless it exists; True when it existed (a resume)."""
        with self.transaction() as con:
            found = con.execute("SELECT 1 FROM tuning_studies WHERE study_id = ?", [study_id]).fetchone()
            if found is not None:
                con.execute("UPDATE tuning_studies SET status = 'running', updated_at = ? WHERE study_id = ?",
                            [now_utc(), study_id])
                return True
            con.execute("INSERT INTO tuning_studies VALUES (?, ?, ?, ?, ?, ?, ?, 'running', NULL, ?, ?)",
                        [study_id, run_id, strategy, metric, json.dumps(space), seed, json.dumps(split),
                         now_utc(), now_utc()])
            return False

    def add_tuning_trial(self, study_id: str, trial: Any) -> None:
        """Keep one finished trial (engine.tuning.tuner.TrialRecord)."""
        with self.transaction() as con:
            con.execute("INSERT INTO tuning_trials VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [study_id, trial.fold, trial.number, json.dumps(trial.params, sort_keys=True),
                         trial.value, trial.judged, trial.p95_ms, trial.calls, trial.seconds, now_utc()])

    def tuning_trials(self, study_id: str) -> list[dict[str, Any]]:
        """Every stored trial of a study, by fold and number, ``params`` decoded."""
        rows = self._dicts("SELECT fold, number, params, value, judged, p95_ms, calls, seconds FROM tuning_trials "
                           "WHERE study_id = ? ORDER BY fold, number", [study_id])
        for r in rows:
            r["params"] = json.loads(r["params"])
        return rows

    def finish_tuning_study(self, study_id: str, report: dict[str, Any]) -> None:
        with self.transaction() as con:
            con.execute("UPDATE tuning_studies SET status = 'complete', report = ?, updated_at = ? "
                        "WHERE study_id = ?", [json.dumps(report), now_utc(), study_id])

    def tuning_studies(self, run_id: str) -> list[dict[str, Any]]:
        """A run's studies, newest first, ``report`` decoded (None until complete)."""
        rows = self._dicts("SELECT study_id, strategy, metric, seed, status, report, created_at, updated_at "
                           "FROM tuning_studies WHERE run_id = ? ORDER BY updated_at DESC", [run_id])
        for r in rows:
            r["report"] = json.loads(r["report"]) if r["report"] else None
        return rows

    def tuning_study(self, study_id: str) -> dict[str, Any]:
        rows = self._dicts("SELECT * FROM tuning_studies WHERE study_id = ?", [study_id])
        if not rows:
            raise SearchGradeError(f"no tuning study {study_id!r}: `searchgrade tune RUN` starts one")
        row = rows[0]
        for key in ("space", "split", "report"):
            row[key] = json.loads(row[key]) if row[key] else None
        return row
