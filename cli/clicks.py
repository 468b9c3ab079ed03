"""`searchgrade clicks import|import-interleaving|show`: click events and team-draft interleaving
results stored with a query log, and what the log supports."""

from __future__ import annotations

import argparse
import json
import sys

from searchgrade.cli.options import add_common, open_store


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("clicks", help="click events in: impressions and clicks per query, document and position; "
                       "team-draft interleaving results; what a log supports")
    clicks = p.add_subparsers(dest="clicks_command", required=True, parser_class=type(p))
    q = clicks.add_parser("import", help="store an events file's impressions and clicks with a query log "
                          "(UBI events JSONL, or a CSV of query_id, action, doc_id, position); a log whose results "
                          "were shown in several orders (several rankers, randomised or swapped results) gives the "
                          "position bias from its own interventions")
    q.add_argument("events", help="the events file (.jsonl, .csv, .parquet)")
    _log_options(q)
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

    q = clicks.add_parser("import-interleaving", help="store team-draft interleaving results with a query log (one "
                          "row per interleaved search: query_id or query, system_a, system_b, clicks_a, clicks_b) "
                          "and print the comparisons they support")
    q.add_argument("results", help="the results file (.csv, .jsonl, .parquet)")
    _log_options(q)
    q.add_argument("--query-id-field", help="column of the query id (default: query_id)")
    q.add_argument("--query-field", help="column of the query text, when the rows have no query id")
    q.add_argument("--a-field", help="column naming the first system (default: system_a, a)")
    q.add_argument("--b-field", help="column naming the second system (default: system_b, b)")
    q.add_argument("--clicks-a-field", help="column of the clicks credited to the first system (default: clicks_a)")
    q.add_argument("--clicks-b-field", help="column of the clicks credited to the second (default: clicks_b)")
    q.add_argument("--format", choices=("auto", "csv", "json", "parquet"), default="auto")
    add_common(q)
    q.set_defaults(handler=cmd_import_interleaving)

    q = clicks.add_parser("show", help="what a log's clicks support: the pairs shown at several positions and the "
                          "position bias they give, the cut-points of its grades, its interleaving comparisons")
    q.add_argument("log", nargs="?", help="the query log (default: the collection's only log)")
    q.add_argument("--collection", help="pick the log among this collection's logs")
    q.add_argument("--format", choices=("text", "json"), default="text")
    add_common(q)
    q.set_defaults(handler=cmd_show)


def _log_options(q: argparse.ArgumentParser) -> None:
    q.add_argument("--log", help="the query log it belongs to (default: the collection's only log)")
    q.add_argument("--collection", help="pick the log among this collection's logs")


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


def cmd_import_interleaving(args: argparse.Namespace) -> int:
    from searchgrade.engine.clicks.interleaving_log import InterleavingOptions, import_interleaving

    fields = {"query_id": args.query_id_field, "query": args.query_field, "system_a": args.a_field,
              "system_b": args.b_field, "clicks_a": args.clicks_a_field, "clicks_b": args.clicks_b_field}
    summary = import_interleaving(open_store(args), args.results, InterleavingOptions(
        log=args.log, collection=args.collection, fields=fields, fmt=args.format))
    for line in summary.lines():
        print(line, file=sys.stderr)
    print(summary.log_name)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from searchgrade.engine.traffic.logs import resolve_log
    from searchgrade.viewmodels.clicks import click_log_report

    store = open_store(args)
    report = click_log_report(store, resolve_log(store, args.log, args.collection)["log_name"])
    if args.format == "json":
        json.dump(report.to_json(), sys.stdout, indent=2, default=str)
        print()
        return 0
    for line in report.lines():
        print(line)
    return 0
