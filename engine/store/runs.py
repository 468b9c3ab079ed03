"""A run's lifecycle in the store: created 'running', updated as stages advance, finished once.

A run ends 'complete', 'failed', 'cancelled' (Ctrl-C, or Cancel in the app) or 'interrupted' (its
process died). Whatever process runs a run owns it by a token (``owner``) and beats its heartbeat
(``heartbeat_at``, engine/run/lifecycle.py); a run still 'running' whose heartbeat is older than the
timeout ($SEARCHGRADE_HEARTBEAT_TIMEOUT_S, default 60 s) is marked interrupted by whoever looks
next (every read of a run does), on any host, with no restart and no process ids (which a
container reuses). A stopped run can be reopened, by one process only, to resume it.

Every status change is one conditional UPDATE (… WHERE status/owner …  RETURNING): two processes
cannot both reopen a run, and a process that lost its run (taken over by a resume) cannot finish it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store.connection import StoreConnection, now_utc
from searchgrade.engine.store.run_summary import write_run_summary

RUN_STATUSES = ("running", "complete", "failed", "interrupted", "cancelled")
#: The statuses a run can be resumed from.
STOPPED_STATUSES = ("interrupted", "failed", "cancelled")

ENV_HEARTBEAT_TIMEOUT = "SEARCHGRADE_HEARTBEAT_TIMEOUT_S"
DEFAULT_HEARTBEAT_TIMEOUT_S = 60.0

#: DuckDB refuses two concurrent updates of one row ("Conflict on update"): run rows are written
#: by one thread at a time in this process (other processes wait for the file lock anyway).
_ROW_WRITES = threading.RLock()


def heartbeat_timeout_s(environ: Mapping[str, str] | None = None) -> float:
    """Seconds without a heartbeat after which a running run counts as interrupted."""
    raw = (os.environ if environ is None else environ).get(ENV_HEARTBEAT_TIMEOUT, "").strip()
    if not raw:
        return DEFAULT_HEARTBEAT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise SearchGradeError(f"{ENV_HEARTBEAT_TIMEOUT}={raw!r} is not a positive number of seconds; "
                               f"unset it for the default of {DEFAULT_HEARTBEAT_TIMEOUT_S:g}")
    return value


def new_owner() -> str:
    """A token naming one process's work on a run (a resume gets a new one)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Beat:
    """What a heartbeat learned: whether the run is still this owner's, and whether to cancel."""

    #: The run is still owned by the caller (False: another process resumed it, or it is gone).
    owned: bool
    #: Someone asked the run to stop (Cancel in the app).
    cancel: bool = False


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


def new_run_id() -> str:
    """A sortable, unique run id: UTC time to the second, then random hex."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _run_record(row: Sequence[Any]) -> RunRecord:
    names = [c.strip() for c in _RUN_COLUMNS.split(",")]
    values = dict(zip(names, row, strict=True))
    for key, default in _JSON_DEFAULTS.items():
        raw = values[key]
        values[key] = json.loads(raw) if raw else default
    from searchgrade.indexes.declared.rerankers import note_rerankers

    note_rerankers(values["config"].get("rerankers"))  # its X_NAME pair with X wherever its names are read
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
        owner: str | None = None,
    ) -> str:
        """A new run, 'running', owned by ``owner`` (engine/run/lifecycle.py beats its heartbeat)."""
        run_id = run_id or new_run_id()
        now = now_utc()
        with self.connect() as con:
            con.execute(
                "INSERT INTO runs (run_id, name, collection_name, collection_path, created_at, status, "
                "stage, mode, label_source, grade_min, grade_max, threshold, k, depth, config, timings, "
                "skipped, stats, notes, pid, host, parent_run_id, heartbeat_at, owner, cancel_requested) "
                "VALUES (?, ?, ?, ?, ?, 'running', 'starting', ?, ?, ?, ?, ?, ?, ?, ?, '{}', '{}', '{}', "
                "?, ?, ?, ?, ?, ?, false)",
                [
                    run_id, name, collection_name, collection_path, now, mode, label_source,
                    grade_min, grade_max, threshold, k, depth, json.dumps(config),
                    json.dumps(list(notes)), os.getpid(), socket.gethostname(), parent_run_id, now, owner,
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
        with _ROW_WRITES, self.connect() as con:
            con.execute(f"UPDATE runs SET {assignments} WHERE run_id = ?", [*values, run_id])  # noqa: S608 - constant names, values bound

    def finish_run(self, run_id: str, status: str, error: str | None = None, *,
                   owner: str | None = None) -> bool:
        """End a run with ``status``; with ``owner``, only if that owner still holds it.

        Returns whether the run was changed (False: another process took it over).
        """
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"status {status!r} is not one of {RUN_STATUSES[1:]}")
        sql = ("UPDATE runs SET status = ?, error = ?, finished_at = ?, stage = ?, cancel_requested = false "
               "WHERE run_id = ?")
        params: list[Any] = [status, error, now_utc(), "done" if status == "complete" else None, run_id]
        if owner is not None:
            sql += " AND owner = ?"
            params.append(owner)
        with _ROW_WRITES, self.transaction() as con:
            changed = bool(con.execute(sql + " RETURNING run_id", params).fetchall())
            if changed and status == "complete":
                # Trends' row for the run lands with its status, or neither does.
                write_run_summary(con, run_id)
            return changed

    def heartbeat(self, run_id: str, owner: str) -> Beat:
        """Say that ``owner`` is still working on the run; learn whether to cancel.

        A run marked interrupted while its owner was alive but slow (a stalled machine) is
        running again: nobody else holds it, and its owner is about to finish it.
        """
        with _ROW_WRITES, self.connect() as con:
            rows = con.execute(
                "UPDATE runs SET heartbeat_at = ?, status = 'running', finished_at = NULL, "
                "error = CASE WHEN status = 'interrupted' THEN NULL ELSE error END "
                "WHERE run_id = ? AND owner = ? AND status IN ('running', 'interrupted') "
                "RETURNING cancel_requested",
                [now_utc(), run_id, owner],
            ).fetchall()
        if not rows:
            return Beat(owned=False)
        return Beat(owned=True, cancel=bool(rows[0][0]))

    def request_cancel(self, run_id: str) -> bool:
        """Ask the process running a run to stop it (it marks it cancelled); False if not running."""
        with _ROW_WRITES, self.connect() as con:
            return bool(con.execute(
                "UPDATE runs SET cancel_requested = true WHERE run_id = ? AND status = 'running' "
                "RETURNING run_id", [run_id]).fetchall())

    def mark_stale_runs(self) -> int:
        """Mark as interrupted the runs still 'running' whose heartbeat is older than the timeout.

        A process killed with SIGKILL cannot mark its own run; the next process to look does.
        Returns how many runs it marked.
        """
        timeout = heartbeat_timeout_s()
        now = now_utc()
        with _ROW_WRITES, self.connect() as con:
            return len(con.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = ?, cancel_requested = false, "
                "error = coalesce(error, ?) "
                "WHERE status = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < ?) RETURNING run_id",
                [now, f"the process running it stopped (killed or crashed): no heartbeat for more "
                      f"than {timeout:g} s", now - timedelta(seconds=timeout)],
            ).fetchall())

    def get_run(self, run_id: str) -> RunRecord:
        self.mark_stale_runs()
        with self.connect() as con:
            row = con.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", [run_id]).fetchone()  # noqa: S608 - constant names, values bound
            if row is None:
                # Accept an unambiguous prefix, as git does for commits.
                rows = con.execute(
                    f"SELECT {_RUN_COLUMNS} FROM runs WHERE starts_with(run_id, ?)", [run_id]  # noqa: S608 - constant names, values bound
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
        self.mark_stale_runs()
        sql = f"SELECT {_RUN_COLUMNS} FROM runs"  # noqa: S608 - constant names, values bound
        params: list[Any] = []
        if collection_name is not None:
            sql += " WHERE collection_name = ?"
            params.append(collection_name)
        sql += " ORDER BY created_at DESC, run_id DESC"
        with self.connect() as con:
            rows = con.execute(sql, params).fetchall()
        return [_run_record(row) for row in rows]

    def collection_fields(self, collection_path: str, collection_name: str) -> list[dict[str, Any]]:
        """How the runs of a collection loaded it (their configs' collection_fields), newest first:
        the runs of that very file or folder first, then the others of the same name."""
        with self.connect() as con:
            rows = con.execute(
                "SELECT config FROM runs WHERE collection_path = ? OR collection_name = ? "
                "ORDER BY collection_path = ? DESC, created_at DESC, run_id DESC",
                [collection_path, collection_name, collection_path],
            ).fetchall()
        fields = [json.loads(raw).get("collection_fields") if raw else None for (raw,) in rows]
        return [f for f in fields if f]

    def reopen_run(self, run_id: str, owner: str | None = None, *, allow_complete: bool = False) -> None:
        """Mark a stopped run 'running' again, owned by ``owner`` (`searchgrade resume`).

        Only an interrupted, failed or cancelled run can be reopened, and only by one process:
        the check and the change are one statement. What the run completed stays. With
        ``allow_complete``, a complete run with failed queries is reopened too, to retry them.
        """
        reopenable = ("interrupted", "failed", "cancelled", *(("complete",) if allow_complete else ()))
        with _ROW_WRITES, self.connect() as con:
            reopened = con.execute(
                "UPDATE runs SET status = 'running', stage = 'resuming', error = NULL, finished_at = NULL, "
                "pid = ?, host = ?, owner = ?, heartbeat_at = ?, cancel_requested = false "
                "WHERE run_id = ? AND list_contains(?, status) RETURNING run_id",
                [os.getpid(), socket.gethostname(), owner, now_utc(), run_id, list(reopenable)],
            ).fetchall()
            if not reopened:
                row = con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()
                status = row[0] if row else "missing"
                raise SearchGradeError(
                    f"run {run_id} is {status}; only an interrupted, failed or cancelled run can be resumed"
                )

    def owns(self, con: Any, run_id: str, owner: str) -> bool:
        """Whether ``owner`` still holds the run, read inside the caller's transaction."""
        row = con.execute("SELECT owner FROM runs WHERE run_id = ?", [run_id]).fetchone()
        return row is not None and row[0] == owner

    def running_where(self, run_id: str) -> str:
        """Where a running run runs, for messages: "process 123 on host h, heartbeat 4 s ago"."""
        with self.connect() as con:
            row = con.execute("SELECT pid, host, heartbeat_at FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            return "unknown process"
        pid, host, beat = row
        where = f"process {pid} on host {host}"
        if beat is not None:
            where += f", last heartbeat {max(0.0, (now_utc() - beat).total_seconds()):.0f} s ago"
        return where
