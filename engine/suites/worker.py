"""The worker: runs the suites whose schedule is due, each due slot once.

``work_once`` looks at every scheduled suite: its newest due slot (engine/suites/schedule.py) that
no worker handled yet is **leased** in the store (``suite_slots``: one row per slot, so of two
workers that look at once exactly one gets it) and run (engine/suites/suite_run.py). Then:

- a worker that was down runs the newest missed slot once, with a note saying how many it
  stands for, never once per missed slot;
- a slot that comes due while the suite is running (in this worker or another) is recorded
  ``skipped`` with a note, and not run late;
- a slot whose worker died (its run's heartbeat went stale: the run is ``interrupted``) is taken
  over by the next worker, which resumes the run (only the missing work) and then compares and
  alerts on it as on any run.

``serve`` calls ``work_once`` until stopped, sleeping until the next slot (at most ``POLL_S``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from searchgrade.engine.run.lifecycle import RunCancelled
from searchgrade.engine.store import Store, heartbeat_timeout_s
from searchgrade.engine.store.connection import now_utc
from searchgrade.engine.suites.schedule import latest_slot, next_slot, slots_between
from searchgrade.engine.suites.suite_run import COULD_NOT_EVALUATE, resume_suite_entry, run_suite

POLL_S = 1.0


@dataclass(frozen=True)
class Handled:
    """What a worker did with one due slot."""

    suite: str
    slot: datetime
    #: "ran", "could not evaluate" or "skipped".
    status: str
    entry_id: str | None = None
    run_id: str | None = None
    note: str | None = None


def _busy_slot(store: Store, suite_name: str) -> tuple[datetime | None, list[dict]]:
    """The slot of this suite a live worker holds, if any, and the leases of dead workers.

    A lease is live while its run is running (a stale heartbeat reads interrupted), and for a
    heartbeat timeout after the lease was taken (no run yet) or after its run ended (the worker
    is still comparing and alerting).
    """
    entries = {e["entry_id"]: e for e in store.suite_entries(suite_name)}
    timeout = heartbeat_timeout_s()
    now = now_utc()
    dead = []
    for row in store.suite_slots(suite_name):
        if row["status"] != "running":
            continue
        entry = entries.get(row["entry_id"]) if row["entry_id"] else None
        since = row["leased_at"]
        if entry is not None and entry["run_id"] is not None:
            run = store.get_run(entry["run_id"])
            if run.status == "running":
                return row["slot"], dead
            since = entry["finished_at"] or run.finished_at or since
            if run.status == "interrupted":
                since = None
        if since is not None and (now - since).total_seconds() < timeout:
            return row["slot"], dead
        dead.append({**row, "entry": entry})
    return None, dead


def _take_over(store: Store, data_dir: str | Path, worker: str, row: dict,
               on_complete: Callable[[Store, str], None] | None, say: Callable[[str], None]) -> Handled | None:
    """A dead worker's slot: its interrupted run resumed (only the missing work), or the slot
    recorded interrupted when there is no run to resume."""
    name, slot, entry = row["suite_name"], row["slot"], row["entry"]
    if not store.take_over_slot(name, slot, row["worker"], worker):
        return None  # another worker took it over
    if entry is None or entry["run_id"] is None or store.get_run(entry["run_id"]).status != "interrupted":
        store.finish_slot(name, slot, "interrupted", note="its worker stopped before its run started")
        return Handled(name, slot, "interrupted")
    say(f"suite {name}: resuming run {entry['run_id']} of the slot of {slot:%Y-%m-%d %H:%M:%S} UTC "
        "(its worker stopped mid-run)")
    outcome = resume_suite_entry(store, data_dir, entry["entry_id"], on_complete=on_complete)
    failed = outcome.status == COULD_NOT_EVALUATE
    store.finish_slot(name, slot, "failed" if failed else "done",
                      note=f"resumed by worker {worker} after its first worker stopped")
    say(f"suite {name}: run {outcome.run_id} {outcome.status}" + (f": {outcome.error}" if outcome.error else ""))
    return Handled(name, slot, COULD_NOT_EVALUATE if failed else "ran", outcome.entry_id, outcome.run_id,
                   "resumed")


def work_once(store: Store, data_dir: str | Path, worker: str, *,
              on_complete: Callable[[Store, str], None] | None = None,
              log: Callable[[str], None] | None = None) -> list[Handled]:
    """Run every scheduled suite's due slot once (module docstring); what was done, per slot."""
    done: list[Handled] = []
    say = log or (lambda _line: None)
    for suite in store.list_suites():
        if not suite.schedule_kind or suite.schedule_anchor is None:
            continue
        kind, expression, anchor = suite.schedule_kind, suite.schedule_expr or "", suite.schedule_anchor
        slot = latest_slot(kind, expression, anchor, now_utc())
        last = store.last_slot(suite.name)
        busy, dead = _busy_slot(store, suite.name)
        for row in dead:
            handled = _take_over(store, data_dir, worker, row, on_complete, say)
            if handled is not None:
                done.append(handled)
        if slot is None or (last is not None and slot <= last):
            continue
        if dead:
            busy, _ = _busy_slot(store, suite.name)
        if busy is not None:
            note = f"came due while the suite was running its slot of {busy:%Y-%m-%d %H:%M:%S} UTC: skipped"
            if store.lease_slot(suite.name, slot, worker, status="skipped", note=note):
                done.append(Handled(suite.name, slot, "skipped", note=note))
                say(f"suite {suite.name}: slot {slot:%Y-%m-%d %H:%M:%S} UTC {note}")
            continue
        if not store.lease_slot(suite.name, slot, worker):
            continue  # another worker took this slot
        missed = slots_between(kind, expression, anchor, last if last is not None else anchor, slot)
        note = (f"{missed} earlier slot{'s' if missed != 1 else ''} passed with no worker free to run "
                f"{'them' if missed != 1 else 'it'}: this run stands for {'them' if missed != 1 else 'it'}"
                if missed else None)
        say(f"suite {suite.name}: running the slot of {slot:%Y-%m-%d %H:%M:%S} UTC" + (f" ({note})" if note else ""))
        try:
            outcome = run_suite(store, data_dir, suite.name, trigger="schedule", slot=slot, on_complete=on_complete,
                                on_entry=lambda e, s=suite.name, t=slot: store.finish_slot(s, t, "running",
                                                                                          entry_id=e, note=note))
        except (KeyboardInterrupt, RunCancelled):
            store.finish_slot(suite.name, slot, "cancelled", note="the worker was stopped during the run")
            raise
        failed = outcome.status == COULD_NOT_EVALUATE
        store.finish_slot(suite.name, slot, "failed" if failed else "done", entry_id=outcome.entry_id)
        done.append(Handled(suite.name, slot, COULD_NOT_EVALUATE if failed else "ran", outcome.entry_id,
                            outcome.run_id, note))
        say(f"suite {suite.name}: run {outcome.run_id or '-'} {outcome.status}"
            + (f": {outcome.error}" if outcome.error else "")
            + "".join(f"; {c.verdict} {c.line()}" for c in outcome.changes if c.verdict))
        late = latest_slot(kind, expression, anchor, now_utc())
        if late is not None and late > slot:
            n = slots_between(kind, expression, anchor, slot, late) + 1
            skip = (f"{n} slot{'s' if n != 1 else ''} came due while the suite was running its slot of "
                    f"{slot:%Y-%m-%d %H:%M:%S} UTC: skipped")
            if store.lease_slot(suite.name, late, worker, status="skipped", note=skip):
                done.append(Handled(suite.name, late, "skipped", note=skip))
                say(f"suite {suite.name}: {skip}")
    return done


def seconds_to_next(store: Store) -> float:
    """Seconds until the next slot of any scheduled suite (POLL_S at most)."""
    now = now_utc()
    waits = [POLL_S]
    for suite in store.list_suites():
        if suite.schedule_kind and suite.schedule_anchor is not None:
            t = next_slot(suite.schedule_kind, suite.schedule_expr or "", suite.schedule_anchor, now)
            waits.append(max(0.05, (t - now).total_seconds()))
    return min(waits)


def serve(store: Store, data_dir: str | Path, worker: str, *,
          on_complete: Callable[[Store, str], None] | None = None,
          log: Callable[[str], None] | None = None, should_stop: Callable[[], bool] = lambda: False) -> None:
    """``work_once`` until ``should_stop()`` (or Ctrl-C / SIGTERM raised as KeyboardInterrupt)."""
    while not should_stop():
        work_once(store, data_dir, worker, on_complete=on_complete, log=log)
        time.sleep(seconds_to_next(store))
