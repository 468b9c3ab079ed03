"""What an alert says: suite, strategy, metric, before -> after with the CI of the change, the
adjusted p, the queries that dropped most, the run's note, what changed, and a link to Compare."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

ENV_APP_URL = "SEARCHGRADE_APP_URL"
DEFAULT_APP_URL = "http://127.0.0.1:8501"


def compare_link(before: str, after: str, environ: Mapping[str, str] | None = None) -> str:
    """The app's Compare page (``$SEARCHGRADE_APP_URL``, default the local app) with the two runs."""
    base = ((os.environ if environ is None else environ).get(ENV_APP_URL) or DEFAULT_APP_URL).rstrip("/")
    return f"{base}/compare (baseline run {before}, candidate run {after})"


def regression_text(suite: str, before: str, after: str, drops: Sequence[Any], *, changes: Sequence[str] = (),
                    note: str | None = None) -> tuple[str, str]:
    """(subject, text) of a regression alert; ``drops`` are StrategyChange (engine/suites/regression.py)."""
    names = ", ".join(d.strategy for d in drops)
    subject = f"searchgrade: suite {suite}: significant drop ({names})"
    lines = [f"searchgrade suite {suite!r}: a significant drop in run {after} against run {before}."]
    for d in drops:
        lines.append(f"- {d.line()}")
        for text, was, now in d.dropped:
            lines.append(f"    dropped most: {text!r} {was:.3f} -> {now:.3f}")
    if note:
        lines.append(f"Note on the run: {note}")
    lines.append("What changed since the previous run: " + ("; ".join(changes) if changes else
                                                              "nothing in the stored configuration"))
    lines.append(f"Compare: {compare_link(before, after)}")
    return subject, "\n".join(lines)


def outage_text(suite: str, error: str, run_id: str | None) -> tuple[str, str]:
    subject = f"searchgrade: suite {suite}: could not evaluate"
    where = f" (run {run_id})" if run_id else ""
    end = "" if error.rstrip().endswith((".", "?", "!")) else "."  # the error may end its own sentence
    return subject, (f"searchgrade suite {suite!r} could not evaluate{where}: {error.rstrip()}{end} "
                     "This is no quality alert: the search was not measured. You get one such alert per "
                     "outage, and one when the suite evaluates again.")


def recovered_text(suite: str, run_id: str) -> tuple[str, str]:
    return (f"searchgrade: suite {suite}: evaluating again",
            f"searchgrade suite {suite!r} evaluates again (run {run_id}) after an outage.")


def trial_text(suite: str) -> tuple[str, str]:
    return (f"searchgrade: suite {suite}: test alert",
            f"A test alert from searchgrade suite {suite!r}: this channel receives the suite's alerts.")
