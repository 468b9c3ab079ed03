"""The Evaluate page's query-log part: a log uploaded and imported with its privacy floor, its head
and tail before anything is sampled, a query set drawn from it, click events in, and the run
options that follow (``query_set``, ``mode``, ``click_model``).

An uploaded log or events file is deleted once imported: only what passed the privacy floor is
kept (in the store), never the raw file.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from searchgrade.engine.clicks.events import EventOptions, EventSummary, import_events
from searchgrade.engine.clicks.grading import MIN_EXAMINATIONS
from searchgrade.engine.clicks.models import CLICK_MODELS, MODEL_LABELS
from searchgrade.engine.store import Store
from searchgrade.engine.traffic.logs import LogOptions, LogSummary, default_name, import_log
from searchgrade.engine.traffic.query_sets import SetOptions, SetSummary, create_query_set, head_and_tail

METHOD_LABELS = {"stratified": "Stratified: head, torso and tail apart (per-band figures)",
                 "frequency": "By frequency: queries drawn in proportion to their searches",
                 "uniform": "Uniform over distinct queries (traffic-weighted figures unreliable)",
                 "top": "The top N most searched (the head only)"}
CLICK_MODEL_CHOICES = {name: MODEL_LABELS[name] for name in CLICK_MODELS}
DEFAULT_MIN_IMPRESSIONS = MIN_EXAMINATIONS


@dataclass
class LogChoice:
    log_name: str
    label: str
    has_clicks: bool


def log_choices(store: Store, collection_name: str) -> list[LogChoice]:
    """The logs of this collection first, then the others (a log may be used on any collection)."""
    logs = sorted(store.query_logs(), key=lambda r: (r["collection_name"] != collection_name, r["log_name"]))
    return [LogChoice(r["log_name"], f"{r['log_name']} ({r['kept_queries']:,} queries, {r['kept_searches']:,} searches"
                      + (f", clicks on {r['click_pairs']:,} pairs" if r["click_pairs"] else "") + ")",
                      bool(r["click_pairs"])) for r in logs]


def has_click_log(store: Store, collection_name: str) -> bool:
    """Whether a query log imported for this collection has click events (grading by clicks can run)."""
    return any(r["click_pairs"] for r in store.query_logs(collection_name))


def set_choices(store: Store, log_name: str) -> dict[str, str]:
    """The query sets drawn from a log: name -> label."""
    return {r["set_name"]: f"{r['set_name']} ({r['method']}, {r['size']:,} queries, "
            f"{r['searches'] / max(1, r['log_searches']):.0%} of searches)" for r in store.query_sets(log_name)}


def _forget(path: Path, data_dir: str | Path) -> None:
    uploads = (Path(data_dir) / "uploads").resolve()
    folder = path.resolve().parent
    if folder.parent == uploads:
        shutil.rmtree(folder, ignore_errors=True)


def import_uploaded_log(store: Store, path: Path, filename: str, data_dir: str | Path, *,
                        collection_name: str, min_count: int, min_users: int) -> LogSummary:
    """Import a log saved from an upload (server/uploads.py) under the uploaded file's name,
    replacing a log of that name; the saved upload is deleted afterwards, imported or not."""
    options = LogOptions(name=default_name(Path(filename)), collection=collection_name, min_count=int(min_count),
                         min_users=int(min_users), replace=True)
    try:
        return import_log(store, path, options)
    finally:
        _forget(path, data_dir)


def import_uploaded_events(store: Store, path: Path, data_dir: str | Path, log_name: str) -> EventSummary:
    """Import events saved from an upload with a log; the saved upload is deleted afterwards."""
    try:
        return import_events(store, path, EventOptions(log=log_name))
    finally:
        _forget(path, data_dir)


def log_summary_lines(summary: LogSummary) -> list[str]:
    lines = [f"{summary.rows_read:,} rows ({summary.layout}): {summary.searches:,} searches of "
             f"{summary.queries:,} distinct queries; stored {summary.kept_queries:,} queries.",
             summary.floor_line()[0].upper() + summary.floor_line()[1:] + "."]
    return lines + [n[0].upper() + n[1:] + "." for n in summary.notes]


def preview(store: Store, log_name: str, n: int = 10) -> dict[str, pd.DataFrame]:
    """The log's head and tail: Rank, Query, Searches, Share of searches, Users."""
    ends = head_and_tail(store, log_name, n)
    return {part: pd.DataFrame([{"Rank": r["rank"], "Query": r["text"], "Searches": r["searches"],
                                 "Share of searches": r["share"], "Users": r["users"]} for r in rows],
                               columns=["Rank", "Query", "Searches", "Share of searches", "Users"])
            for part, rows in ends.items()}


def sample(store: Store, log_name: str, method: str, size: int, seed: int) -> SetSummary:
    return create_query_set(store, log_name, SetOptions(method=method, size=size, seed=seed))


def run_options(query_set: str | None, click_model: str | None, min_impressions: int) -> dict[str, Any]:
    """RunConfig keywords for the Evaluate form: the set, and grading by clicks when chosen."""
    if query_set is None:
        return {}
    out: dict[str, Any] = {"query_set": query_set}
    if click_model is not None:
        out.update(mode="clicks", click_model=click_model, min_impressions=int(min_impressions))
    return out
