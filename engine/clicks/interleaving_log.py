"""Team-draft interleaving results in, and the comparisons they support out.

The file has one row per interleaved search: its query (``query_id``, a search of the log as its
UBI queries name it, or ``query``, the text, matched after the log's normalisation), the two systems
interleaved (``system_a``, ``system_b``) and the clicks credited to each (``clicks_a``,
``clicks_b``: the clicks on the documents each system's team contributed). CSV, JSON lines or
Parquet. A row of a query the log's privacy floor dropped is skipped and counted. Importing again
replaces the log's interleaving results; replacing the log drops them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchgrade.engine.clicks.events import by_query_id_or_text
from searchgrade.engine.clicks.interleaving import InterleavingComparison, QueryOutcome, compare_interleaved
from searchgrade.engine.traffic.files import Path_, check_readable, file_format, resolve_columns

GUESSES: dict[str, tuple[str | Path_, ...]] = {
    "query_id": ("query_id", "qid", "search_id", "request_id"),
    "query": ("user_query", "query", "query_text", "q", "search_term"),
    "system_a": ("system_a", "a", "ranker_a", "team_a", "control"),
    "system_b": ("system_b", "b", "ranker_b", "team_b", "treatment"),
    "clicks_a": ("clicks_a", "credit_a", "a_clicks", "team_a_clicks"),
    "clicks_b": ("clicks_b", "credit_b", "b_clicks", "team_b_clicks"),
}
FLAGS = {"query_id": "--query-id-field", "query": "--query-field", "system_a": "--a-field", "system_b": "--b-field",
         "clicks_a": "--clicks-a-field", "clicks_b": "--clicks-b-field"}


@dataclass(frozen=True)
class InterleavingOptions:
    log: str | None = None
    collection: str | None = None
    fields: dict[str, str | None] | None = None
    fmt: str = "auto"


@dataclass
class InterleavingSummary:
    log_name: str
    source: str
    rows: int
    searches: int
    queries: int
    skipped: int
    replaced: int
    comparisons: list[InterleavingComparison]

    def lines(self) -> list[str]:
        out = [f"{self.rows:,} interleaved searches of {self.queries:,} queries stored with log {self.log_name}"]
        if self.skipped:
            out.append(f"{self.skipped:,} rows of queries the log's privacy floor dropped (or not in the log) skipped")
        if self.replaced:
            out.append(f"replaced the {self.replaced:,} interleaving results stored for log {self.log_name} before")
        return out + [c.sentence() for c in self.comparisons]


def import_interleaving(store: Any, path: str | Path,
                        options: InterleavingOptions = InterleavingOptions()) -> InterleavingSummary:
    """Store an interleaving file's results with a query log (all or nothing), and compare."""
    from searchgrade.engine.traffic.logs import resolve_log

    source = Path(path)
    check_readable(source)
    log = resolve_log(store, options.log, options.collection)
    fmt = file_format(source, options.fmt)
    spec = store.describe_file(source, fmt)
    roles = resolve_columns(spec, GUESSES, dict(options.fields or {}), FLAGS,
                            required=("system_a", "system_b", "clicks_a", "clicks_b"))
    roles = by_query_id_or_text(source, spec, roles, store, log["log_name"], rows="rows",
                                id_field="the log's UBI query_id", fix="name the query text with --query-field")
    counts = store.import_interleaving(spec, roles, log["log_name"])
    return InterleavingSummary(log["log_name"], str(source), counts["rows"], counts["searches"], counts["queries"],
                               counts["skipped"], counts["replaced"], log_comparisons(store, log["log_name"]))


def log_comparisons(store: Any, log_name: str, ranks: list[int] | None = None) -> list[InterleavingComparison]:
    """The comparisons a log's interleaving results support (of the queries at ``ranks`` only, when
    given: a query set's)."""
    rows = store.interleaving_results(log_name, ranks)
    return compare_interleaved([QueryOutcome(str(r["rank"]), r["system_a"], r["system_b"], int(r["wins_a"]),
                                             int(r["wins_b"]), int(r["ties"]), int(r["searches"])) for r in rows])
