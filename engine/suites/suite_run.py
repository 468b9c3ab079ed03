"""One run of a suite: evaluate, compare with the previous complete run, alert.

``run_suite`` makes a new run of the suite (engine/suites/definition.py: the frozen queries and the
stored configuration), records it as the suite's entry with its configuration snapshot and what
changed since the previous entry (engine/suites/changes.py), compares it with the suite's previous
complete run (engine/suites/regression.py) and sends the alerts (engine/alerts/):

- a significant **drop** of any strategy: one regression alert listing each strategy that dropped;
- a significant **gain**: recorded in the entry and marked on the trend, no alert;
- **could not evaluate**: the run failed (the collection is gone, the run raised), or a strategy
  failed on every query (its backend is down). The first such entry of an outage alerts, the
  next ones do not; the first entry that evaluates again sends one "evaluating again" alert.

An alert channel that fails is retried and recorded (engine/alerts/deliver.py), never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from searchgrade.core.records import Collection, SearchGradeError, collection_fingerprint
from searchgrade.engine.alerts.deliver import Delivery, deliver
from searchgrade.engine.alerts.text import outage_text, recovered_text, regression_text
from searchgrade.engine.run.lifecycle import RunCancelled, RunTakenOver
from searchgrade.engine.store import Store, SuiteRecord
from searchgrade.engine.store.connection import now_utc
from searchgrade.engine.suites.changes import config_changes, snapshot
from searchgrade.engine.suites.definition import suite_collection, suite_config
from searchgrade.engine.suites.regression import StrategyChange, compare_runs

#: Entry statuses: compared with a previous run, the first run (nothing to compare), not evaluated.
COMPARED, FIRST, COULD_NOT_EVALUATE, CANCELLED = "compared", "first", "could not evaluate", "cancelled"


@dataclass
class SuiteRunOutcome:
    entry_id: str
    run_id: str | None
    status: str
    baseline_run_id: str | None = None
    changes: list[StrategyChange] = field(default_factory=list)
    config_changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    alerts: list[Delivery] = field(default_factory=list)
    error: str | None = None

    @property
    def drops(self) -> list[StrategyChange]:
        return [c for c in self.changes if c.verdict == "drop"]

    @property
    def gains(self) -> list[StrategyChange]:
        return [c for c in self.changes if c.verdict == "gain"]


def previous_complete(store: Store, suite_name: str, before_entry: str | None = None) -> dict[str, Any] | None:
    """The suite's newest entry whose run is complete and was evaluated (before ``before_entry``)."""
    entries = store.suite_entries(suite_name)
    if before_entry is not None:
        ids = [e["entry_id"] for e in entries]
        entries = entries[: ids.index(before_entry)] if before_entry in ids else entries
    done = [e for e in entries if e["run_status"] == "complete" and e["status"] in (COMPARED, FIRST, "source")]
    return done[-1] if done else None


def _down_strategies(store: Store, run_id: str) -> list[str]:
    """The strategies that failed on every query of the run (their backend was down or answered
    nothing usable), each in words with the reason (engine/failures/diagnosis.py)."""
    from searchgrade.engine.failures.diagnosis import strategy_failures

    return [f.text for f in strategy_failures(store, store.get_run(run_id))
            if f.queries and f.queries_failed >= f.queries]


def run_suite(store: Store, data_dir: str | Path, name: str, *, trigger: str = "manual",
              slot: datetime | None = None, progress: Callable[..., None] | None = None,
              on_complete: Callable[[Store, str], None] | None = None,
              on_entry: Callable[[str], None] | None = None, note: str | None = None,
              on_run_created: Callable[[str], None] | None = None,
              collection: Collection | None = None) -> SuiteRunOutcome:
    """A new run of suite ``name``, compared and alerted on (module docstring).

    ``collection`` is the suite's collection when the caller loaded it already (``suite_collection``).
    ``note`` is a person's note on the run ("synonyms v3 deployed"), shown on the trend and in
    the alert. Never raises for a failed evaluation (it is recorded "could not evaluate" and alerted);
    raises SearchGradeError for an unknown suite, and re-raises Ctrl-C / a cancel from the app.
    """
    from searchgrade.engine.run.pipeline import run_evaluation

    suite = store.get_suite(name)
    entry_id = store.start_suite_entry(suite.name, trigger, slot)
    if note:
        store.update_suite_entry(entry_id, note=note)
    if on_entry is not None:
        on_entry(entry_id)
    outcome = SuiteRunOutcome(entry_id, None, COULD_NOT_EVALUATE)
    snap = None
    try:
        if collection is None:
            collection, outcome.notes = suite_collection(suite, store)
        else:
            outcome.notes = list(collection.notes)
        config = suite_config(suite)
        snap = snapshot(config.to_json(), fingerprint=collection_fingerprint(collection),
                        documents=len(collection.documents))
        store.update_suite_entry(entry_id, snapshot=snap)  # a resume of this entry reads it

        def created(run_id: str) -> None:
            outcome.run_id = run_id
            store.update_suite_entry(entry_id, run_id=run_id)
            if on_run_created is not None:
                on_run_created(run_id)

        evaluation = run_evaluation(collection, config, store, data_dir, progress=progress,
                                    on_run_created=created, on_complete=on_complete)
        outcome.notes += [n for n in evaluation.notes if n not in outcome.notes]
    except (KeyboardInterrupt, RunCancelled, RunTakenOver):
        store.update_suite_entry(entry_id, status=CANCELLED, finished_at=now_utc())
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the evaluation is recorded, never a crash of the worker
        outcome.error = f"{type(exc).__name__ if not isinstance(exc, SearchGradeError) else 'error'}: " \
                        f"{(str(exc).splitlines() or [''])[0]}"
    return _conclude(store, suite, outcome, snap)


def _conclude(store: Store, suite: SuiteRecord, outcome: SuiteRunOutcome, snap: dict[str, Any] | None) -> SuiteRunOutcome:
    """The entry's end: outage or comparison with the previous complete run, stored, alerted."""
    entry_id = outcome.entry_id
    # A backend that answered no query is the outage to report, whatever failed after it.
    down = _down_strategies(store, outcome.run_id) if outcome.run_id else []
    if down:
        outcome.error = "; ".join(down)
    previous = previous_complete(store, suite.name, entry_id)
    if snap is not None:
        outcome.config_changes = config_changes(previous["snapshot"] if previous else None, snap)
    if outcome.error is None and outcome.run_id is not None:
        outcome.status = COMPARED if previous else FIRST
        if previous:
            outcome.baseline_run_id = previous["run_id"]
            outcome.changes = compare_runs(store, previous["run_id"], outcome.run_id, suite.metric, suite.margin)
    store.update_suite_entry(entry_id, status=outcome.status, baseline_run_id=outcome.baseline_run_id,
                             snapshot=snap, changes=outcome.config_changes,
                             verdict=[c.to_json() for c in outcome.changes], error=outcome.error,
                             finished_at=now_utc())
    outcome.alerts = _alert(store, suite.name, outcome)
    return outcome


def resume_suite_entry(store: Store, data_dir: str | Path, entry_id: str, *,
                       on_complete: Callable[[Store, str], None] | None = None) -> SuiteRunOutcome:
    """Continue the interrupted run of a suite's entry (its worker was killed mid-run): only the
    missing work is done (engine/run/pipeline.py ``resume_run``), then it is compared and alerted
    on as a new run is.
    """
    from searchgrade.engine.run.pipeline import resume_run

    entry = store.suite_entry(entry_id)
    suite = store.get_suite(entry["suite_name"])
    outcome = SuiteRunOutcome(entry_id, entry["run_id"], COULD_NOT_EVALUATE)
    snap = entry["snapshot"]
    try:
        collection, outcome.notes = suite_collection(suite, store)
        if snap is None:
            snap = snapshot(store.get_run(entry["run_id"]).config, fingerprint=collection_fingerprint(collection),
                            documents=len(collection.documents))
        resume_run(entry["run_id"], store, data_dir, collection=collection, on_complete=on_complete)
        outcome.notes.append(f"resumed run {entry['run_id']} after its worker stopped")
    except (KeyboardInterrupt, RunCancelled, RunTakenOver):
        raise
    except Exception as exc:  # noqa: BLE001 - recorded, as for a new run
        outcome.error = f"{type(exc).__name__ if not isinstance(exc, SearchGradeError) else 'error'}: " \
                        f"{(str(exc).splitlines() or [''])[0]}"
    return _conclude(store, suite, outcome, snap)


def _alert(store: Store, name: str, outcome: SuiteRunOutcome) -> list[Delivery]:
    """The alerts this entry calls for (module docstring); the outage flag kept in the suite."""
    suite = store.get_suite(name)
    sent: list[Delivery] = []
    if outcome.status == COULD_NOT_EVALUATE:
        if not suite.outage:
            store.update_suite(name, outage=True)
            subject, text = outage_text(name, outcome.error or "unknown error", outcome.run_id)
            sent += deliver(store, suite, kind="could not evaluate", subject=subject, text=text,
                            entry_id=outcome.entry_id)
        return sent
    if suite.outage:
        store.update_suite(name, outage=False)
        subject, text = recovered_text(name, outcome.run_id or "")
        sent += deliver(store, suite, kind="recovered", subject=subject, text=text, entry_id=outcome.entry_id)
    if outcome.drops:
        note = store.suite_entry(outcome.entry_id).get("note")
        subject, text = regression_text(name, outcome.baseline_run_id or "", outcome.run_id or "", outcome.drops,
                                        changes=outcome.config_changes, note=note)
        sent += deliver(store, suite, kind="regression", subject=subject, text=text, entry_id=outcome.entry_id)
    return sent
