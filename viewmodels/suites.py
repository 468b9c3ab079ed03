"""The Suites page's view model, and the actions the app takes on suites (engine/suites/).

``suite_trend``: a suite's runs as one paired series per strategy (the suite's metric, with each
run's 95% CI), each point with its verdict against the previous complete run ("drop", "gain" or
none), what changed since the previous run (from the stored configurations) and its note.
``said`` is the point's words (its verdict line, what changed, its note), shown on hover both on
the Suites page and on Trends when a suite is picked (views/_suite_trend.py draws the chart for both).
``suite_runs_table``: one row per run of the suite. The actions (save a run as a suite, run it in
the app's background job, schedule it, set its alert channels, send a test alert, note a run) are
thin calls into engine/suites/ so the page imports no engine module beyond this one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.alerts.channels import check_email_address, check_smtp_server, check_webhook_url, mask
from searchgrade.engine.alerts.deliver import Delivery, deliver
from searchgrade.engine.alerts.text import trial_text
from searchgrade.engine.metrics import parse_metric
from searchgrade.engine.store import Store, SuiteRecord
from searchgrade.engine.store.connection import now_utc
from searchgrade.engine.suites.definition import suite_collection, suite_from_run
from searchgrade.engine.suites.regression import StrategyChange
from searchgrade.engine.suites.schedule import check, describe
from searchgrade.engine.suites.suite_run import COULD_NOT_EVALUATE, run_suite
from searchgrade.viewmodels.common import METRIC_LABELS

TREND_COLUMNS = ["entry_id", "run_id", "created_at", "strategy", "value", "ci_low", "ci_high", "verdict",
                 "line", "changes", "note", "said"]


@dataclass(frozen=True)
class SuiteSummary:
    """What the page says of a suite (alert targets masked: they may hold tokens)."""

    name: str
    collection: str
    queries: int
    strategies: list[str]
    metric: str
    margin: float
    schedule: str
    webhook: str | None
    email: str | None
    outage: bool


def summary(suite: SuiteRecord) -> SuiteSummary:
    return SuiteSummary(suite.name, suite.collection_name, len(suite.query_ids), list(suite.config.get("strategies") or []),
                        suite.metric, suite.margin, describe(suite.schedule_kind, suite.schedule_expr),
                        mask(suite.webhook) if suite.webhook else None, mask(suite.email) if suite.email else None,
                        suite.outage)


def suite_trend(store: Store, name: str) -> pd.DataFrame:
    """One row per run of the suite and strategy (columns TREND_COLUMNS), oldest first; runs
    that are not complete are left out of the series (the runs table lists them)."""
    suite = store.get_suite(name)
    spec = parse_metric(suite.metric)
    rows: list[dict[str, Any]] = []
    for e in store.suite_entries(name):
        if e["run_status"] != "complete" or e["status"] == COULD_NOT_EVALUATE:
            continue
        run = store.get_run(e["run_id"])
        k = spec.resolve_k(run.k, run.depth)
        verdicts = {c.strategy: c for c in (StrategyChange.from_json(v) for v in e["verdict"] or [])}
        for r in store.metric_summary(run.run_id, k):
            if r["metric"] != spec.key:
                continue
            change = verdicts.get(r["strategy"])
            rows.append({"entry_id": e["entry_id"], "run_id": run.run_id, "created_at": run.created_at,
                         "strategy": r["strategy"], "value": r["value"], "ci_low": r["ci_low"],
                         "ci_high": r["ci_high"], "verdict": change.verdict if change else None,
                         "line": change.line() if change else "", "changes": list(e["changes"] or []),
                         "note": e["note"]})
            rows[-1]["said"] = point_words(rows[-1]["line"], rows[-1]["changes"], rows[-1]["note"])
    return pd.DataFrame(rows, columns=TREND_COLUMNS)


def point_words(line: str, changes: list[str], note: str | None) -> str:
    """A trend point in words: its change against the previous run, what changed in the
    configuration since, its note ("no change" when there is nothing to say)."""
    parts = [line, "changed: " + "; ".join(changes) if changes else "", f"note: {note}" if note else ""]
    return " | ".join(p for p in parts if p) or "no change"


def metric_parts(metric: str) -> tuple[str, int | None]:
    """A suite's metric as the Trends selectors show one: ("DCG", 3) for "dcg@3" (k None: the run's)."""
    spec = parse_metric(metric)
    return METRIC_LABELS.get(spec.key, spec.key), spec.k


def metric_words(metric: str) -> str:
    """A suite's metric by its name on the pages: "dcg@10" -> "DCG@10"."""
    name, k = metric_parts(metric)
    return f"{name}@{k}" if k is not None else name


def suite_names(store: Store, collection: str | None = None) -> list[str]:
    """The suites of ``collection`` (every suite when None), by name."""
    return [s.name for s in store.list_suites() if collection is None or s.collection_name == collection]


def suite_runs_table(store: Store, name: str) -> pd.DataFrame:
    """One row per run of the suite, newest first: when (UTC), how, the run, its outcome, the
    significant changes, what changed, the note."""
    rows = []
    for e in reversed(store.suite_entries(name)):
        changes = [StrategyChange.from_json(v) for v in e["verdict"] or []]
        marked = [f"{c.verdict}: {c.line()}" for c in changes if c.verdict]
        # When the run was made: the suite's source run was made before the suite was saved.
        created = store.get_run(e["run_id"]).created_at if e["run_id"] else e["created_at"]
        rows.append({"created (UTC)": created, "trigger": e["trigger"], "run": e["run_id"] or "-",
                     "status": e["status"] + (f": {e['error']}" if e["error"] else ""),
                     "significant changes": "; ".join(marked) or ("none" if changes else "-"),
                     "what changed": "; ".join(e["changes"] or []) or "-", "note": e["note"] or ""})
    return pd.DataFrame(rows)


def skipped_slots(store: Store, name: str) -> list[str]:
    return [f"{r['slot']:%Y-%m-%d %H:%M:%S} UTC {r['status']}: {r['note']}" for r in store.suite_slots(name)
            if r["status"] in ("skipped", "interrupted")]


def alerts_table(store: Store, name: str) -> pd.DataFrame:
    rows = [{"sent (UTC)": a["created_at"], "kind": a["kind"], "channel": a["channel"], "to": a["target"],
             "status": a["status"], "attempts": a["attempts"], "error": a["error"] or ""}
            for a in reversed(store.suite_alerts(name))]
    return pd.DataFrame(rows)


def suite_of_run(store: Store, run_id: str) -> str | None:
    return store.suite_of_runs().get(run_id)


def save_suite(store: Store, name: str, run_id: str, margin: float = 0.0) -> SuiteRecord:
    return suite_from_run(store, name, run_id, margin=margin)


def set_schedule(store: Store, name: str, kind: str | None, expression: str = "") -> str:
    """Schedule the suite (``kind`` None: no schedule); the schedule in words."""
    if kind is None:
        store.update_suite(name, schedule_kind=None, schedule_expr=None, schedule_anchor=None)
        return describe(None, None)
    expression = check(kind, expression)
    store.update_suite(name, schedule_kind=kind, schedule_expr=expression, schedule_anchor=now_utc())
    return describe(kind, expression)


def set_alerts(store: Store, name: str, *, webhook: str | None, email: str | None, declared_in: str,
               check_url: Callable[[str], Any]) -> None:
    """Set the channels typed in the app ('' clears one, None keeps it); a webhook URL goes through
    ``check_url`` (the page's outbound guard) and is sent to later under the policy of where it was
    typed (``declared_in``: "app" or "exposed app")."""
    fields: dict[str, Any] = {}
    if webhook is not None:
        if webhook.strip():
            url = check_webhook_url(webhook)
            check_url(url)
            fields.update(webhook=url, alerts_declared_in=declared_in)
        else:
            fields["webhook"] = None
    if email is not None:
        if email.strip():
            fields["email"] = check_email_address(email)
            check_smtp_server()
        else:
            fields["email"] = None
    if fields:
        store.update_suite(name, **fields)


def send_test_alert(store: Store, name: str) -> list[Delivery]:
    suite = store.get_suite(name)
    if not suite.webhook and not suite.email:
        raise SearchGradeError(f"suite {name} has no alert channel: add a webhook URL or an email address")
    subject, text = trial_text(name)
    return deliver(store, suite, kind="test", subject=subject, text=text)


def set_note(store: Store, run_id: str, note: str) -> None:
    store.set_run_note(run_id, note)


@dataclass
class SuiteJobOutcome:
    """What the app's background job reads of a suite's run (server/jobs.py)."""

    run_id: str | None
    status: str
    skipped: dict[str, str] = field(default_factory=dict)


def job_parts(store: Store, name: str) -> tuple[Callable[[], Any], Callable[..., SuiteJobOutcome]]:
    """(load_collection, run) for ``server.jobs.start_job``: a run of the suite in the app's
    background worker, compared and alerted on as `searchgrade suite run` does."""
    suite = store.get_suite(name)

    def load() -> Any:
        return suite_collection(suite, store)[0]

    def run(collection: Any, config: Any, job_store: Store, data_dir: Path, *, progress: Any = None,
            on_run_created: Any = None, on_usage: Any = None, on_complete: Any = None) -> SuiteJobOutcome:
        outcome = run_suite(job_store, data_dir, name, trigger="app", progress=progress, on_complete=on_complete,
                            on_run_created=on_run_created, collection=collection)
        if outcome.status == COULD_NOT_EVALUATE:
            raise SearchGradeError(f"suite {name} could not evaluate: {outcome.error}")
        return SuiteJobOutcome(outcome.run_id, "complete", dict(job_store.get_run(outcome.run_id).skipped))

    return load, run
