"""A query log in: read with DuckDB straight from its file, kept as its distinct queries.

Three layouts, told apart by the columns the file has:

- ``searches``: one row per search: a query text and a time, optionally a user or session id.
- ``counts``: one row per distinct query with its number of searches (a ``count`` column).
- ``ubi``: User Behavior Insights' ``queries`` layout: ``user_query``, ``query_id``, ``client_id``,
  ``timestamp``; its query ids are kept, so ``clicks import`` can attribute UBI events.

A query's text is normalised before it is counted (Unicode NFC, lower case, trimmed, inner
whitespace collapsed): "Covid  Vaccine" and "covid vaccine" are one query. Each distinct query
keeps its number of searches, distinct users (when the log has a user column) and first and last
seen. The privacy floor drops the queries seen fewer than ``min_count`` times or by fewer than
``min_users`` distinct users before anything is stored, and the summary says how many it dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.traffic.files import check_readable, file_format, resolve_columns

#: Column names tried for each role, in order (case and punctuation ignored).
LOG_GUESSES: dict[str, tuple[str, ...]] = {
    "query": ("user_query", "query", "query_text", "q", "search_query", "search_term", "searchterm",
              "keywords", "search", "term", "text"),
    "time": ("timestamp", "time", "ts", "datetime", "date", "searched_at", "created_at", "event_time"),
    "user": ("client_id", "user_id", "user", "session_id", "session", "visitor_id", "anonymous_id"),
    "count": ("count", "searches", "frequency", "freq", "num_searches", "query_count", "n"),
    "id": ("query_id", "qid", "search_id", "request_id"),
}
LOG_FLAGS = {"query": "--query-field", "time": "--time-field", "user": "--user-field",
             "count": "--count-field", "id": "--id-field"}
LAYOUTS = ("searches", "counts", "ubi")
#: A log or set name: what a user types after --query-set.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,79}$")


@dataclass(frozen=True)
class LogOptions:
    """How to read a log: its name, collection, columns (None: guessed; '': none) and privacy floor."""

    name: str | None = None
    collection: str | None = None
    query_field: str | None = None
    time_field: str | None = None
    user_field: str | None = None
    count_field: str | None = None
    id_field: str | None = None
    #: Keep a query only if seen at least this many times (1: keep all).
    min_count: int = 1
    #: ... and by at least this many distinct users (needs a user column above 1).
    min_users: int = 1
    fmt: str = "auto"
    replace: bool = False


@dataclass
class LogSummary:
    log_name: str
    collection_name: str | None
    source: str
    layout: str
    columns: dict[str, str]
    rows_read: int
    searches: int
    queries: int
    kept_queries: int
    kept_searches: int
    min_count: int
    min_users: int
    first_seen: datetime | None
    last_seen: datetime | None
    query_ids: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def dropped_queries(self) -> int:
        return self.queries - self.kept_queries

    @property
    def dropped_searches(self) -> int:
        return self.searches - self.kept_searches

    def floor_line(self) -> str:
        """What the privacy floor did, in one line."""
        if self.min_count <= 1 and self.min_users <= 1:
            return "privacy floor: none (every query kept; set --min-count or --min-users to drop rare queries)"
        share = self.dropped_searches / self.searches if self.searches else 0.0
        rule = " or ".join(part for part in (
            f"seen fewer than {self.min_count} times" if self.min_count > 1 else "",
            f"by fewer than {self.min_users} users" if self.min_users > 1 else "") if part)
        return (f"privacy floor: dropped {self.dropped_queries:,} of {self.queries:,} distinct queries "
                f"({self.dropped_searches:,} searches, {share:.1%} of traffic) {rule}; they were never stored")


def check_name(name: str, what: str, flag: str) -> str:
    if not NAME.match(name or ""):
        raise SearchGradeError(f"{flag} {name!r} is not a usable {what} name: use letters, digits and _ . : - "
                               "(at most 80 characters, starting with a letter or digit)")
    return name


def default_name(path: Path) -> str:
    stem = path.name.split(".")[0]
    cleaned = re.sub(r"[^A-Za-z0-9_.:-]+", "-", stem).strip("-.") or "log"
    return cleaned[:80] if cleaned[0].isalnum() else f"log-{cleaned}"[:80]


def layout_of(columns: dict[str, Any]) -> str:
    if "count" in columns:
        return "counts"
    query = columns.get("query", ())
    if "id" in columns and query and query[-1].lower() == "user_query":
        return "ubi"
    return "searches"


def import_log(store: Any, path: str | Path, options: LogOptions = LogOptions()) -> LogSummary:
    """Store a query log's distinct queries (searchgrade.engine.store.Store); all or nothing.

    Raises:
        SearchGradeError: the file is missing or unreadable, has no query column, holds times or
            counts that do not parse, or nothing passes the privacy floor; nothing is stored then.
    """
    source = Path(path)
    check_readable(source)
    for flag, value in (("--min-count", options.min_count), ("--min-users", options.min_users)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SearchGradeError(f"{flag} of {value!r} must be a whole number of at least 1 (1: keep all)")
    name = check_name(options.name or default_name(source), "query log", "--name")
    if store.query_log_exists(name) and not options.replace:
        raise SearchGradeError(f"a query log named {name!r} is stored already; choose another --name, or "
                               "--replace it (its clicks are dropped with it; query sets keep their queries)")
    fmt = file_format(source, options.fmt)
    spec = store.describe_file(source, fmt)
    given = {"query": options.query_field, "time": options.time_field, "user": options.user_field,
             "count": options.count_field, "id": options.id_field}
    roles = resolve_columns(spec, LOG_GUESSES, given, LOG_FLAGS, required=("query",))
    if options.min_users > 1 and roles.get("user") is None:
        raise SearchGradeError(f"{source}: --min-users {options.min_users} needs a user or session column and the "
                               f"log has none (columns: {', '.join(spec.names)}); name it with --user-field, or "
                               "drop --min-users")
    layout = layout_of(roles.columns)
    notes = []
    if roles.get("time") is None:
        notes.append("the log has no time column: first and last seen are unknown")
    record = {"log_name": name, "collection_name": options.collection, "source": str(source), "layout": layout,
              "min_count": options.min_count, "min_users": options.min_users, "notes": notes}
    counts = store.import_query_log(spec, roles, record, replace=options.replace)
    if counts["empty_rows"]:
        notes.append(f"{counts['empty_rows']:,} row{'' if counts['empty_rows'] == 1 else 's'} with an empty "
                     "query skipped")
    return LogSummary(name, options.collection, str(source), layout, roles.shown(), counts["rows_read"],
                      counts["searches"], counts["queries"], counts["kept_queries"], counts["kept_searches"],
                      options.min_count, options.min_users, counts["first_seen"], counts["last_seen"],
                      counts["query_ids"], notes)


def resolve_log(store: Any, log_name: str | None, collection: str | None) -> dict[str, Any]:
    """The log a command means: the one named, else the only one of the collection (or stored)."""
    if log_name is not None:
        return store.query_log(log_name)
    logs = store.query_logs(collection)
    where = f" of collection {collection!r}" if collection else ""
    if not logs:
        raise SearchGradeError(f"no query log{where} is stored; import one first with "
                               "`searchgrade queries import LOG" + (f" --collection {collection}`" if collection else "`"))
    if len(logs) > 1:
        raise SearchGradeError(f"{len(logs)} query logs{where} are stored ({', '.join(r['log_name'] for r in logs)}); "
                               "name one with --log")
    return logs[0]
