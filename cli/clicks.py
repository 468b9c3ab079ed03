"""`searchgrade clicks import`: click events (UBI events, or a plain CSV) stored with a query log."""

from __future__ import annotations

import argparse
import sys

from searchgrade.cli.options import add_common, open_store


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("clicks", help="click events in: impressions and clicks per query, document and position")
    clicks = p.add_subparsers(dest="clicks_command", required=True, parser_class=type(p))
    q = clicks.add_parser("import", help="store an events file's impressions and clicks with a query log "
                          "(UBI events JSONL, or a CSV of query_id, action, doc_id, position)")
    q.add_argument("events", help="the events file (.jsonl, .csv, .parquet)")
    q.add_argument("--log", help="the query log the events belong to (default: the collection's only log)")
    q.add_argument("--collection", help="pick the log among this collection's logs")
    q.add_argument("--query-id-field", help="column of the query id (default: query_id)")
    q.add_argument("--query-field", help="column of the query text, when the events have no query id")
    q.add_argument("--action-field", help="column of the action (default: action_name, action)")
    q.add_argument("--doc-field", help="column of the document id (default: event_attributes.object.object_id, "
                   "object_id, doc_id)")
    q.add_argument("--position-field", help="column of the 1-based position (default: "
                   "event_attributes.position.ordinal, position)")
    q.add_argument("--format", choices=("auto", "csv", "json", "parquet"), default="auto")
    add_common(q)
    q.set_defaults(handler=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    from searchgrade.engine.clicks.events import EventOptions, import_events

    summary = import_events(open_store(args), args.events, EventOptions(
        log=args.log, collection=args.collection, query_id_field=args.query_id_field, query_field=args.query_field,
        action_field=args.action_field, doc_field=args.doc_field, position_field=args.position_field,
        fmt=args.format))
    for line in summary.lines():
        print(line, file=sys.stderr)
    print(summary.log_name)
    return 0
