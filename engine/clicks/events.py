"""Click events in: impressions and clicks per (query, document, position), read with DuckDB straight
from the file and kept with the query log they belong to.

Two layouts:

- ``ubi``: User Behavior Insights' ``events`` (JSON lines as OpenSearch exports them, or the same
  in Parquet): ``action_name`` (``impression``, ``click``; other actions are counted and left
  out), ``query_id`` (a search of the log's UBI ``queries``), the document in
  ``event_attributes.object.object_id`` and its rank in ``event_attributes.position.ordinal``.
- ``plain``: a CSV (or JSONL, Parquet) of the same flat: ``query_id`` (or ``query``, the text, matched
  after the log's normalisation), ``action``, ``doc_id``, ``position``.

Every event's query id must be in the log: one that is not stops the import (the events belong to
another log), nothing stored. Events of a query the log's privacy floor dropped are skipped and
counted. Importing events again replaces the log's clicks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.traffic.files import Path_, check_readable, file_format, resolve_columns

EVENT_GUESSES: dict[str, tuple[str | Path_, ...]] = {
    "query_id": ("query_id", "qid", "search_id", "request_id"),
    "query": ("user_query", "query", "query_text", "q", "search_term"),
    "action": ("action_name", "action", "event", "event_type", "event_name", "type"),
    "doc_id": (("event_attributes", "object", "object_id"), "object_id", "doc_id", "document_id", "docid",
               "item_id", "product_id", "corpus_id"),
    "position": (("event_attributes", "position", "ordinal"), "position", "ordinal", "rank", "pos"),
}
EVENT_FLAGS = {"query_id": "--query-id-field", "query": "--query-field", "action": "--action-field",
               "doc_id": "--doc-field", "position": "--position-field"}


@dataclass(frozen=True)
class EventOptions:
    log: str | None = None
    collection: str | None = None
    query_id_field: str | None = None
    query_field: str | None = None
    action_field: str | None = None
    doc_field: str | None = None
    position_field: str | None = None
    fmt: str = "auto"


@dataclass
class EventSummary:
    log_name: str
    source: str
    layout: str
    columns: dict[str, str]
    events: int
    clicks: int
    impressions: int
    pairs: int
    skipped_events: int
    other_actions: int
    replaced: int

    def lines(self) -> list[str]:
        out = [f"{self.events:,} events ({self.layout}) -> {self.impressions:,} impressions and {self.clicks:,} "
               f"clicks of {self.pairs:,} (query, document) pairs, stored with log {self.log_name}"]
        if self.other_actions:
            out.append(f"{self.other_actions:,} events of other actions (not click or impression) left out")
        if self.skipped_events:
            out.append(f"{self.skipped_events:,} events of queries the log's privacy floor dropped (or not in the "
                       "log, for events named by query text) skipped")
        if self.replaced:
            out.append(f"replaced the {self.replaced:,} click stats stored for log {self.log_name} before")
        return out


def by_query_id_or_text(source: Path, spec: Any, roles: Any, store: Any, log_name: str, *, rows: str,
                        id_field: str, fix: str) -> Any:
    """The columns a file of a log's searches names its queries by: the query id when it has one (and
    then only the id: the log must have kept its searches' ids), else the query text.

    Raises:
        SearchGradeError: one line, naming the file and the fix.
    """
    if roles.get("query_id") is None and roles.get("query") is None:
        raise SearchGradeError(f"{source}: no query id or query column (columns: {', '.join(spec.names)}); name it "
                               f"with --query-id-field ({id_field}) or --query-field (the query text)")
    if roles.get("query_id") is None:
        return roles
    if not store.query_log_ids_count(log_name):
        raise SearchGradeError(
            f"{source}: its {rows} name query ids, and log {log_name!r} kept none (a log keeps the "
            f"query_id of each search when it has that column, as UBI queries do); {fix}")
    columns = dict(roles.columns)
    columns.pop("query", None)
    return type(roles)(columns)


def import_events(store: Any, path: str | Path, options: EventOptions = EventOptions()) -> EventSummary:
    """Store an events file's clicks with a query log (searchgrade.engine.store.Store); all or nothing."""
    from searchgrade.engine.traffic.logs import resolve_log

    source = Path(path)
    check_readable(source)
    log = resolve_log(store, options.log, options.collection)
    fmt = file_format(source, options.fmt)
    spec = store.describe_file(source, fmt)
    given = {"query_id": options.query_id_field, "query": options.query_field, "action": options.action_field,
             "doc_id": options.doc_field, "position": options.position_field}
    roles = resolve_columns(spec, EVENT_GUESSES, given, EVENT_FLAGS, required=("action", "doc_id", "position"))
    roles = by_query_id_or_text(source, spec, roles, store, log["log_name"], rows="events", id_field="UBI query_id",
                                fix="import that log, or name the events' query text with --query-field")
    nested = any(len(p) > 1 for p in roles.columns.values())
    layout = "ubi" if nested or (roles.get("action") or ("",))[-1].lower() == "action_name" else "plain"
    counts = store.import_click_events(spec, roles, log["log_name"], layout)
    return EventSummary(log["log_name"], str(source), layout, roles.shown(), counts["events"], counts["clicks"],
                        counts["impressions"], counts["pairs"], counts["skipped_events"], counts["other_actions"],
                        counts["replaced"])
