"""A run's lifecycle in the store: created 'running', updated as stages advance, finished once.

A run ends 'complete', 'failed' or 'interrupted'; one whose process died without saying so (kill -9)
is marked interrupted by the next process that looks (``mark_stale_runs``). A stopped run can be
reopened to resume it.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from core.records import SearchGradeError
from engine.store.connection import StoreConnection, now_utc

RUN_STATUSES = ("running", "complete", "failed", "interrupted")


@dataclass
class RunRecord:
    run_id: str
    name: str
    collection_name: str
    collection_path: str
    created_at: datetime
    finished_at: datetime | None
    status: str
    stage: str | None
    mode: str
    label_source: str
    grade_min: int | None
    grade_max: int | None
    threshold: int
    k: int
    depth: int
    config: dict[str, Any]
    timings: dict[str, float]
    skipped: dict[str, str]
    stats: dict[str, Any]
    notes: list[str]
    error: str | None
    #: The run this one was re-scored from (same search results, newer labels).
    parent_run_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["created_at"] = self.created_at.isoformat()
        d["finished_at"] = self.finished_at.isoformat() if self.finished_at else None
        return d


_RUN_COLUMNS = (
    "run_id, name, collection_name, collection_path, created_at, finished_at, status, stage, "
    "mode, label_source, grade_min, grade_max, threshold, k, depth, config, timings, skipped, "
    "stats, notes, error, parent_run_id"
)
_JSON_DEFAULTS = {"config": {}, "timings": {}, "skipped": {}, "stats": {}, "notes": []}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def new_run_id() -> str:
    """A sortable, unique run id: UTC time to the second, then random hex."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _run_record(row: Sequence[Any]) -> RunRecord:
    names = [c.strip() for c in _RUN_COLUMNS.split(",")]
    values = dict(zip(names, row, strict=True))
    for key, default in _JSON_DEFAULTS.items():
        raw = values[key]
        values[key] = json.loads(raw) if raw else default
    return RunRecord(**values)


class RunsMixin(StoreConnection):
    """Creating, updating, finishing, listing and reopening runs."""

    def create_run(
        self,
        *,
        name: str,
        collection_name: str,
        collection_path: str,
        mode: str,
        label_source: str,
        grade_min: int | None,
        grade_max: int | None,
        threshold: int,
        k: int,
        depth: int,
        config: dict[str, Any],
        notes: Sequence[str] = (),
        run_id: str | None = None,
        parent_run_id: str | None = None,
    ) -> str:
        run_id = run_id or new_run_id()
        with self.connect() as con:
            con.execute(
                "INSERT INTO runs (run_id, name, collection_name, collection_path, created_at, status, "
                "stage, mode, label_source, grade_min, grade_max, threshold, k, depth, config, timings, "
                "skipped, stats, notes, pid, host, parent_run_id) "
                "VALUES (?, ?, ?, ?, ?, 'running', 'starting', ?, ?, ?, ?, ?, ?, ?, ?, '{}', '{}', '{}', ?, ?, ?, ?)",
                [
                    run_id, name, collection_name, collection_path, now_utc(), mode, label_source,
                    grade_min, grade_max, threshold, k, depth, json.dumps(config),
                    json.dumps(list(notes)), os.getpid(), socket.gethostname(), parent_run_id,
                ],
            )
        return run_id

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Set some columns of a run; dicts and lists are stored as JSON."""
        allowed = {"stage", "timings", "skipped", "stats", "notes", "status", "error", "threshold",
                   "grade_min", "grade_max", "config", "label_source"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update run columns {sorted(unknown)}; allowed: {sorted(allowed)}")
        # Column names come from the fixed allow-list above, never from user input.
        assignments = ", ".join(f"{column} = ?" for column in fields)
        values = [json.dumps(v) if isinstance(v, (dict, list)) else v for v in fields.values()]
        with self.connect() as con:
            con.execute(f"UPDATE runs SET {assignments} WHERE run_id = ?", [*values, run_id])

    def finish_run(self, run_id: str, status: str, error: str | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"status {status!r} is not one of {RUN_STATUSES}")
        with self.connect() as con:
            con.execute(
                "UPDATE runs SET status = ?, error = ?, finished_at = ?, stage = ? WHERE run_id = ?",
                [status, error, now_utc(), "done" if status == "complete" else None, run_id],
            )

    def mark_stale_runs(self) -> int:
        """Mark as interrupted the runs still 'running' whose process on this host has died.

        A process killed with SIGKILL cannot mark its own run; the next process to look does.
        """
        host = socket.gethostname()
        with self.connect() as con:
            rows = con.execute(
                "SELECT run_id, pid FROM runs WHERE status = 'running' AND host = ?", [host]
            ).fetchall()
            stale = [run_id for run_id, pid in rows if pid is None or not _pid_alive(pid)]
            for run_id in stale:
                con.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = ?, "
                    "error = coalesce(error, 'the process running it stopped (killed or crashed)') "
                    "WHERE run_id = ?",
                    [now_utc(), run_id],
                )
        return len(stale)

    def get_run(self, run_id: str) -> RunRecord:
        with self.connect() as con:
            row = con.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", [run_id]).fetchone()
            if row is None:
                # Accept an unambiguous prefix, as git does for commits.
                rows = con.execute(
                    f"SELECT {_RUN_COLUMNS} FROM runs WHERE starts_with(run_id, ?)", [run_id]
                ).fetchall()
                if len(rows) == 1:
                    row = rows[0]
        if row is None:
            raise SearchGradeError(
                f"no run {run_id!r} in {self.path}; list the runs with `searchgrade runs`"
            )
        return _run_record(row)

    def list_runs(self, collection_name: str | None = None) -> list[RunRecord]:
        """Runs, newest first."""
        sql = f"SELECT {_RUN_COLUMNS} FROM runs"
        params: list[Any] = []
        if collection_name is not None:
            sql += " WHERE collection_name = ?"
            params.append(collection_name)
        sql += " ORDER BY created_at DESC, run_id DESC"
        with self.connect() as con:
            rows = con.execute(sql, params).fetchall()
        return [_run_record(row) for row in rows]

    def reopen_run(self, run_id: str) -> None:
        """Mark a stopped run 'running' again, owned by this process (`searchgrade resume`).

        Only an interrupted or failed run can be reopened; what it completed stays.
        """
        with self.connect() as con:
            row = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()
            if row is None or row[0] not in ("interrupted", "failed"):
                status = row[0] if row else "missing"
                raise SearchGradeError(
                    f"run {run_id} is {status}; only an interrupted or failed run can be resumed"
                )
            con.execute(
                "UPDATE runs SET status = 'running', stage = 'resuming', error = NULL, "
                "finished_at = NULL, pid = ?, host = ? WHERE run_id = ?",
                [os.getpid(), socket.gethostname(), run_id],
            )

    def run_pid(self, run_id: str) -> int | None:
        """The id of the process that last ran a run (None if unknown)."""
        with self.connect() as con:
            row = con.execute("SELECT pid FROM runs WHERE run_id = ?", [run_id]).fetchone()
        return row[0] if row else None
