"""Suites in the MCP tools: what list_runs says of each suite, the suite a run belongs to, its
regression verdict, the baseline of a run given alone, and a suite's run in a worker.

A suite (engine/suites/, docs/suites.md) is a saved evaluation whose runs form a series; each run
is compared with the suite's previous complete run by engine/suites/regression.py (the one paired
procedure) when it ends, and the verdict is stored in its entry (``suite_runs``). Nothing is
computed again here: the verdict shown is the stored one, the baseline of a run given alone is
the runner's own ``previous_complete``, and a suite's run started by an agent is ``run_suite``,
the function `searchgrade suite run NAME` calls (trigger "mcp").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store import Store, SuiteRecord
from searchgrade.server.mcp.payload import capped, untrusted_query

#: Entry statuses of engine/suites/suite_run.py and the source run's entry (engine/suites/definition.py).
COMPARED, FIRST, COULD_NOT_EVALUATE, SOURCE, RUNNING = "compared", "first", "could not evaluate", "source", "running"
#: Suites list_runs shows at most.
MAX_SUITES = 50
#: Configuration changes a verdict lists at most.
MAX_CHANGES = 10
#: The trigger recorded for a run an agent started.
TRIGGER = "mcp"


@dataclass(frozen=True)
class SuiteRun:
    """A run of a suite: the suite, the run's entry, and its baseline (None for a first run)."""

    suite: SuiteRecord
    entry: dict[str, Any]
    baseline_run_id: str | None


def entry_of_run(store: Store, run_id: str) -> tuple[str, dict[str, Any]] | None:
    """(suite name, the run's entry) when ``run_id`` (a full id) is a run of a suite, else None."""
    name = store.suite_of_runs().get(run_id)
    if name is None:
        return None
    for entry in reversed(store.suite_entries(name)):
        if entry["run_id"] == run_id:
            return name, entry
    return None


def suite_run(store: Store, run_id: str) -> SuiteRun | None:
    """The suite of a run and the run its suite compares it with (the runner's previous complete run)."""
    from searchgrade.engine.suites.suite_run import previous_complete

    found = entry_of_run(store, store.get_run(run_id).run_id)
    if found is None:
        return None
    name, entry = found
    previous = previous_complete(store, name, entry["entry_id"])
    baseline = entry["baseline_run_id"] or (previous["run_id"] if previous else None)
    return SuiteRun(store.get_suite(name), entry, baseline)


def baseline_of(store: Store, run_id: str, needs: str) -> SuiteRun:
    """The suite run of ``run_id`` with a baseline to compare it with, or one line saying why not.

    ``needs`` names the argument the agent gives instead ("run_b", "baseline").
    """
    run = store.get_run(run_id)
    found = suite_run(store, run.run_id)
    if found is None:
        raise SearchGradeError(f"run {run.run_id} is no run of a suite, so it has no previous run to be compared "
                               f"with: give {needs} too (list_runs lists the runs and their suites)")
    if found.baseline_run_id is None:
        raise SearchGradeError(f"run {run.run_id} is the first complete run of suite {found.suite.name}: there is "
                               f"no previous run to compare it with; give {needs} to compare it with another run")
    return found


def verdict_word(entry: dict[str, Any]) -> str:
    """The entry's outcome in one word or phrase: drop, gain, no significant change, first run, ..."""
    status = entry["status"]
    if status == COMPARED:
        kinds = {v.get("verdict") for v in entry["verdict"] or []}
        return "drop" if "drop" in kinds else "gain" if "gain" in kinds else "no significant change"
    return {FIRST: "first run: nothing to compare with", SOURCE: "the run the suite was made from",
            RUNNING: "running: compared when it ends"}.get(status, status)


def changes_json(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The entry's stored per-strategy changes (engine/suites/regression.py's StrategyChange)."""
    from searchgrade.engine.suites.regression import StrategyChange

    out = []
    for raw in entry["verdict"] or []:
        c = StrategyChange.from_json(raw)
        out.append({"strategy": c.strategy, "metric": c.metric, "before": c.before, "after": c.after,
                    "change": c.change, "ci_low": c.ci_low, "ci_high": c.ci_high, "p_value_adjusted": c.p_value,
                    "queries": c.n, "comparisons": c.m, "verdict": c.verdict, "line": c.line(),
                    "dropped_most": [{"query": untrusted_query(text), "before": before, "after": after}
                                     for text, before, after in c.dropped]})
    return out


def verdict_json(store: Store, found: SuiteRun) -> dict[str, Any]:
    """What run_summary says of a run of a suite: its regression verdict against the previous run."""
    suite, entry = found.suite, found.entry
    changed, changed_left = capped(entry["changes"] or [], MAX_CHANGES)
    return {"suite": suite.name, "metric": suite.metric, "margin": suite.margin,
            "baseline_run_id": entry["baseline_run_id"] or (found.baseline_run_id if entry["status"] == RUNNING
                                                            else None),
            "status": entry["status"], "verdict": verdict_word(entry), "error": entry["error"],
            "strategies": changes_json(entry), "config_changes": changed, "config_changes_left_out": changed_left,
            "note": entry["note"],
            "rule": (f"paired per query over the queries both runs hold ({suite.metric}); a drop (alerted) when "
                     f"the 95% CI of after - before, adjusted for the strategies compared, lies entirely on the "
                     f"worse side of 0 and the change is worse than the margin ({suite.margin:g}); a gain likewise on "
                     "the better side (engine/statistics/pairing.py)")}


def suite_brief(store: Store, suite: SuiteRecord) -> dict[str, Any]:
    """A suite as list_runs shows it: settings, schedule, last run and last verdict (no alert target:
    a webhook URL may hold a token)."""
    from searchgrade.engine.store.connection import now_utc
    from searchgrade.engine.suites.schedule import describe, next_slot

    entries = store.suite_entries(suite.name)
    runs = [e for e in entries if e["run_id"]]
    last = runs[-1] if runs else None
    judged = [e for e in entries if e["status"] in (COMPARED, FIRST, COULD_NOT_EVALUATE)]
    verdict = judged[-1] if judged else None
    next_due = None
    if suite.schedule_kind and suite.schedule_anchor is not None:
        due = next_slot(suite.schedule_kind, suite.schedule_expr or "", suite.schedule_anchor, now_utc())
        next_due = due.isoformat(timespec="seconds")
    return {"suite": suite.name, "collection": suite.collection_name, "mode": suite.mode,
            "queries": len(suite.query_ids), "strategies": list(suite.config.get("strategies") or []),
            "metric": suite.metric, "margin": suite.margin,
            "schedule": describe(suite.schedule_kind, suite.schedule_expr), "next_due_utc": next_due,
            "runs": len(runs),
            "last_run": None if last is None else {
                "run_id": last["run_id"], "status": last["run_status"], "trigger": last["trigger"],
                "created_at": last["created_at"].isoformat(timespec="seconds")},
            "last_verdict": None if verdict is None else {
                "run_id": verdict["run_id"], "baseline_run_id": verdict["baseline_run_id"],
                "verdict": verdict_word(verdict), "error": verdict["error"],
                "strategies": [{"strategy": c["strategy"], "verdict": c["verdict"], "change": c["change"],
                                "line": c["line"]} for c in changes_json(verdict)]},
            "alert_channels": [c for c, v in (("webhook", suite.webhook), ("email", suite.email)) if v],
            "outage": suite.outage}


def suite_briefs(store: Store) -> tuple[list[dict[str, Any]], int]:
    """Every suite (at most MAX_SUITES) as list_runs shows it, and how many were left out."""
    shown, left = capped(store.list_suites(), MAX_SUITES)
    return [suite_brief(store, s) for s in shown], left


@dataclass
class _Unloaded:
    """A suite's collection that did not load (server/jobs.py reads its notes)."""

    notes: tuple[str, ...] = ()


@dataclass
class _Outcome:
    """What the background job reads of a suite's run (server/jobs.py)."""

    run_id: str | None
    status: str
    skipped: dict[str, str]


def suite_job(store: Store, name: str, note: str | None = None) -> tuple[Any, Any]:
    """(load_collection, run) for ``server.jobs.start_job``: one run of suite ``name`` by
    ``run_suite``, compared with its previous complete run and alerted on, as `searchgrade suite
    run NAME` does; a run that could not evaluate fails the job with the runner's reason."""
    from searchgrade.engine.suites.definition import suite_collection
    from searchgrade.engine.suites.suite_run import run_suite

    suite = store.get_suite(name)

    def load() -> Any:
        try:
            return suite_collection(suite, store)[0]
        except SearchGradeError:
            # The collection is gone or unreadable: run_suite loads it again, records the entry
            # "could not evaluate" and alerts, as `searchgrade suite run` does.
            return _Unloaded()

    def run(collection: Any, _config: Any, job_store: Store, data_dir: Path, *, progress: Any = None,
            on_run_created: Any = None, on_usage: Any = None, on_complete: Any = None) -> _Outcome:
        outcome = run_suite(job_store, data_dir, name, trigger=TRIGGER, progress=progress, on_complete=on_complete,
                            on_run_created=on_run_created, note=note,
                            collection=None if isinstance(collection, _Unloaded) else collection)
        if outcome.status == COULD_NOT_EVALUATE:
            raise SearchGradeError(f"suite {name} could not evaluate: {outcome.error}")
        return _Outcome(outcome.run_id, "complete", dict(job_store.get_run(outcome.run_id).skipped))

    return load, run
