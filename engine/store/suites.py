"""Evaluation suites in the store (migration 12): suites, their runs, schedule slots and alerts.

- ``suites``: one row per suite: the source run's configuration (declared strategies included) and
  frozen query ids, the metric and margin of its regression test, its schedule (UTC), its alert
  channels (as typed: a webhook URL, an email address; never a password) and whether its backend is
  in an outage (one "could not evaluate" alert per outage).
- ``suite_runs``: one entry per evaluation of a suite (``suite run``, the app's "Run now", or a
  schedule's slot): the run it made, the configuration snapshot, what changed since the previous
  entry, the verdict against the previous complete run, a person's note.
- ``suite_slots``: the lease of a schedule's due slot. A slot is one row, keyed by (suite, slot):
  two workers cannot both insert it, so a due slot is run once however many workers look.
- ``suite_alerts``: each alert per channel, sent or failed, with its attempts and error.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store.connection import StoreConnection, now_utc

_SUITE_COLUMNS = ("name, collection_name, collection_path, source_run_id, mode, config, query_ids, metric, "
                  "margin, schedule_kind, schedule_expr, schedule_anchor, webhook, email, alerts_declared_in, "
                  "outage, created_at, updated_at")
_ENTRY_COLUMNS = ("entry_id, suite_name, run_id, slot, trigger, status, baseline_run_id, snapshot, changes, "
                  "verdict, error, note, created_at, finished_at")
_JSON_ENTRY = ("snapshot", "changes", "verdict")


@dataclass
class SuiteRecord:
    name: str
    collection_name: str
    collection_path: str
    source_run_id: str
    mode: str
    config: dict[str, Any]
    query_ids: list[str]
    metric: str
    margin: float
    schedule_kind: str | None
    schedule_expr: str | None
    schedule_anchor: datetime | None
    webhook: str | None
    email: str | None
    alerts_declared_in: str | None
    outage: bool
    created_at: datetime
    updated_at: datetime


def _suite(row: tuple) -> SuiteRecord:
    names = [c.strip() for c in _SUITE_COLUMNS.split(",")]
    values = dict(zip(names, row, strict=True))
    values["config"] = json.loads(values["config"])
    values["query_ids"] = json.loads(values["query_ids"])
    return SuiteRecord(**values)


def _entry(row: tuple) -> dict[str, Any]:
    names = [c.strip() for c in _ENTRY_COLUMNS.split(",")]
    values = dict(zip(names, row, strict=True))
    for key in _JSON_ENTRY:
        values[key] = json.loads(values[key]) if values[key] else None
    return values


def new_entry_id() -> str:
    return uuid.uuid4().hex[:12]


class SuitesMixin(StoreConnection):
    """The suites, suite_runs, suite_slots and suite_alerts tables."""

    # -- suites -----------------------------------------------------------------------------------

    def create_suite(self, *, name: str, collection_name: str, collection_path: str, source_run_id: str,
                     mode: str, config: dict[str, Any], query_ids: list[str], metric: str, margin: float) -> None:
        """A new suite, in one statement (nothing is stored half).

        Raises:
            SearchGradeError: a suite of that name exists.
        """
        now = now_utc()
        with self.transaction() as con:
            if con.execute("SELECT 1 FROM suites WHERE name = ?", [name]).fetchone():
                raise SearchGradeError(f"a suite named {name!r} exists already: pick another name, or "
                                       f"`searchgrade suite delete {name}` first")
            con.execute(
                "INSERT INTO suites (name, collection_name, collection_path, source_run_id, mode, config, "
                "query_ids, metric, margin, outage, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, false, ?, ?)",
                [name, collection_name, collection_path, source_run_id, mode, json.dumps(config),
                 json.dumps(query_ids), metric, margin, now, now])

    def get_suite(self, name: str) -> SuiteRecord:
        with self.connect() as con:
            row = con.execute(f"SELECT {_SUITE_COLUMNS} FROM suites WHERE name = ?", [name]).fetchone()  # noqa: S608 - constant names, values bound
        if row is None:
            raise SearchGradeError(f"no suite named {name!r}; list them with `searchgrade suite list`, or "
                                   f"make one with `searchgrade suite create {name} --from RUN`")
        return _suite(row)

    def list_suites(self) -> list[SuiteRecord]:
        with self.connect() as con:
            rows = con.execute(f"SELECT {_SUITE_COLUMNS} FROM suites ORDER BY name").fetchall()  # noqa: S608 - constant names, values bound
        return [_suite(r) for r in rows]

    def update_suite(self, name: str, **fields: Any) -> None:
        """Set some columns of a suite (dicts and lists as JSON)."""
        allowed = {"config", "metric", "margin", "schedule_kind", "schedule_expr", "schedule_anchor",
                   "webhook", "email", "alerts_declared_in", "outage"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update suite columns {sorted(unknown)}; allowed: {sorted(allowed)}")
        self.get_suite(name)
        # Column names come from the allow-list above, never from input.
        assignments = ", ".join(f"{column} = ?" for column in fields)
        values = [json.dumps(v) if isinstance(v, (dict, list)) else v for v in fields.values()]
        with self.connect() as con:
            con.execute(f"UPDATE suites SET {assignments}, updated_at = ? WHERE name = ?",  # noqa: S608 - constant names, values bound
                        [*values, now_utc(), name])

    def delete_suite(self, name: str) -> None:
        """Remove a suite with its entries, slots and alerts; its runs stay (they are runs)."""
        self.get_suite(name)
        with self.transaction() as con:
            for table, column in (("suite_alerts", "suite_name"), ("suite_slots", "suite_name"),
                                  ("suite_runs", "suite_name"), ("suites", "name")):
                con.execute(f"DELETE FROM {table} WHERE {column} = ?", [name])  # noqa: S608 - constant names, values bound

    # -- entries (the suite's runs) --------------------------------------------------------------

    def start_suite_entry(self, suite_name: str, trigger: str, slot: datetime | None = None) -> str:
        entry_id = new_entry_id()
        with self.connect() as con:
            con.execute("INSERT INTO suite_runs (entry_id, suite_name, slot, trigger, status, created_at) "
                        "VALUES (?, ?, ?, ?, 'running', ?)", [entry_id, suite_name, slot, trigger, now_utc()])
        return entry_id

    def update_suite_entry(self, entry_id: str, **fields: Any) -> None:
        allowed = {"run_id", "status", "baseline_run_id", "snapshot", "changes", "verdict", "error",
                   "finished_at", "note"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update suite_runs columns {sorted(unknown)}; allowed: {sorted(allowed)}")
        assignments = ", ".join(f"{column} = ?" for column in fields)
        values = [json.dumps(v) if isinstance(v, (dict, list)) else v for v in fields.values()]
        with self.connect() as con:
            con.execute(f"UPDATE suite_runs SET {assignments} WHERE entry_id = ?", [*values, entry_id])  # noqa: S608 - constant names, values bound

    def suite_entries(self, suite_name: str) -> list[dict[str, Any]]:
        """A suite's entries, oldest first, each with its run's status (``run_status``)."""
        cols = ", ".join(f"e.{c.strip()}" for c in _ENTRY_COLUMNS.split(","))
        with self.connect() as con:
            rows = con.execute(
                f"SELECT {cols}, r.status FROM suite_runs e LEFT JOIN runs r ON r.run_id = e.run_id "  # noqa: S608 - constant names, values bound
                "WHERE e.suite_name = ? ORDER BY e.created_at, e.entry_id", [suite_name]).fetchall()
        out = []
        for row in rows:
            entry = _entry(row[:-1])
            entry["run_status"] = row[-1]
            out.append(entry)
        return out

    def suite_entry(self, entry_id: str) -> dict[str, Any]:
        with self.connect() as con:
            row = con.execute(f"SELECT {_ENTRY_COLUMNS} FROM suite_runs WHERE entry_id = ?", [entry_id]).fetchone()  # noqa: S608 - constant names, values bound
        if row is None:
            raise SearchGradeError(f"no suite run entry {entry_id!r}")
        return _entry(row)

    def suite_of_runs(self) -> dict[str, str]:
        """run id -> the suite it is a run of."""
        with self.connect() as con:
            rows = con.execute("SELECT run_id, suite_name FROM suite_runs WHERE run_id IS NOT NULL").fetchall()
        return dict(rows)

    def set_run_note(self, run_id: str, note: str) -> str:
        """Attach a person's note to a suite's run ("synonyms v3 deployed"); the suite's name.

        Raises:
            SearchGradeError: the run is no run of a suite.
        """
        with self.connect() as con:
            rows = con.execute("UPDATE suite_runs SET note = ? WHERE run_id = ? OR starts_with(run_id, ?) "
                               "RETURNING suite_name, run_id", [note, run_id, run_id]).fetchall()
        if not rows:
            raise SearchGradeError(f"run {run_id!r} is no run of a suite; `searchgrade runs` lists runs with "
                                   "their suite")
        return rows[0][0]

    # -- schedule slots (the lease) ---------------------------------------------------------------

    def lease_slot(self, suite_name: str, slot: datetime, worker: str, *, status: str = "running",
                   note: str | None = None) -> bool:
        """Take a due slot for ``worker``: True for exactly one caller however many ask (the row's
        primary key decides); False when the slot was taken (or recorded skipped) already."""
        with self.connect() as con:
            rows = con.execute(
                "INSERT INTO suite_slots (suite_name, slot, worker, status, note, leased_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING slot",
                [suite_name, slot, worker, status, note, now_utc()]).fetchall()
        return bool(rows)

    def take_over_slot(self, suite_name: str, slot: datetime, old_worker: str, worker: str) -> bool:
        """Take a dead worker's running slot for ``worker``: True for exactly one caller."""
        with self.connect() as con:
            return bool(con.execute(
                "UPDATE suite_slots SET worker = ?, leased_at = ? WHERE suite_name = ? AND slot = ? AND worker = ? "
                "AND status = 'running' RETURNING slot", [worker, now_utc(), suite_name, slot, old_worker]).fetchall())

    def finish_slot(self, suite_name: str, slot: datetime, status: str, *, entry_id: str | None = None,
                    note: str | None = None) -> None:
        with self.connect() as con:
            con.execute("UPDATE suite_slots SET status = ?, entry_id = coalesce(?, entry_id), "
                        "note = coalesce(?, note) WHERE suite_name = ? AND slot = ?",
                        [status, entry_id, note, suite_name, slot])

    def suite_slots(self, suite_name: str) -> list[dict[str, Any]]:
        """A suite's slots, oldest first."""
        return self._dicts("SELECT suite_name, slot, worker, status, entry_id, note, leased_at FROM suite_slots "
                           "WHERE suite_name = ? ORDER BY slot", [suite_name])

    def last_slot(self, suite_name: str) -> datetime | None:
        with self.connect() as con:
            return con.execute("SELECT max(slot) FROM suite_slots WHERE suite_name = ?", [suite_name]).fetchone()[0]

    # -- alerts -----------------------------------------------------------------------------------

    def record_alert(self, *, suite_name: str, entry_id: str | None, kind: str, channel: str, target: str,
                     status: str, attempts: int, error: str | None, text: str) -> None:
        with self.connect() as con:
            con.execute("INSERT INTO suite_alerts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [new_entry_id(), suite_name, entry_id, kind, channel, target, status, attempts, error,
                         text, now_utc()])

    def suite_alerts(self, suite_name: str) -> list[dict[str, Any]]:
        """A suite's alerts, oldest first (targets as recorded: masked)."""
        return self._dicts("SELECT alert_id, suite_name, entry_id, kind, channel, target, status, attempts, error, "
                           "text, created_at FROM suite_alerts WHERE suite_name = ? ORDER BY created_at, alert_id",
                           [suite_name])
