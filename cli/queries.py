"""`searchgrade queries import|sample|list|show`: query logs in, query sets sampled by traffic."""

from __future__ import annotations

import argparse
import sys

from searchgrade.cli.options import add_common, open_store
from searchgrade.engine.traffic.bands import HEAD_SHARE, TORSO_SHARE
from searchgrade.engine.traffic.sampling import METHODS


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("queries", help="query logs in, and query sets sampled from them by traffic")
    queries = p.add_subparsers(dest="queries_command", required=True, parser_class=type(p))

    q = queries.add_parser("import", help="store a query log's distinct queries with their counts (CSV, "
                           "JSONL or Parquet; per search, per query with a count, or UBI queries)")
    q.add_argument("log", help="the log file (.csv, .tsv, .jsonl, .parquet; .gz too)")
    q.add_argument("--collection", help="the collection the log belongs to (as labels belong to one)")
    q.add_argument("--name", help="the log's name (default: the file's name without extensions)")
    q.add_argument("--query-field", help="column of the query text (default: guessed: user_query, query, q, ...)")
    q.add_argument("--time-field", help="column of the search's time ('' for none; default: guessed)")
    q.add_argument("--user-field", help="column of the user or session ('' for none; default: guessed)")
    q.add_argument("--count-field", help="column of a per-query count (default: guessed: count, searches, ...)")
    q.add_argument("--id-field", help="column of each search's query id, kept for clicks (default: query_id)")
    q.add_argument("--min-count", type=int, default=1,
                   help="privacy floor: drop queries seen fewer than N times before storing (default: 1, keep all)")
    q.add_argument("--min-users", type=int, default=1,
                   help="privacy floor: drop queries seen by fewer than M distinct users (default: 1)")
    q.add_argument("--format", choices=("auto", "csv", "json", "parquet"), default="auto")
    q.add_argument("--replace", action="store_true", help="replace a stored log of that name (and its clicks)")
    add_common(q)
    q.set_defaults(handler=cmd_import)

    q = queries.add_parser("sample", help="a seeded query set from a stored log: uniform, by frequency, the "
                           "top N, or stratified into head, torso and tail")
    q.add_argument("log", help="the stored log's name (see `searchgrade queries list`)")
    q.add_argument("--method", choices=METHODS, default="stratified",
                   help="how to draw (default: stratified); the docs say which to use when")
    q.add_argument("--size", type=int, default=200, help="queries in the set (default: 200)")
    q.add_argument("--seed", type=int, default=0, help="seed of the draw (default: 0)")
    q.add_argument("--name", help="the set's name, for `evaluate --query-set` (default: LOG-METHOD-SIZE-sSEED)")
    q.add_argument("--head-share", type=float, default=HEAD_SHARE,
                   help=f"the head: the queries making this share of searches (default: {HEAD_SHARE})")
    q.add_argument("--torso-share", type=float, default=TORSO_SHARE,
                   help=f"head and torso together (default: {TORSO_SHARE}); the rest is the tail")
    q.add_argument("--replace", action="store_true", help="replace a stored set of that name")
    add_common(q)
    q.set_defaults(handler=cmd_sample)

    q = queries.add_parser("list", help="the stored query logs and query sets")
    add_common(q)
    q.set_defaults(handler=cmd_list)

    q = queries.add_parser("show", help="a stored log's head and tail, or a query set's queries")
    q.add_argument("name", help="a log or a query set")
    q.add_argument("-n", type=int, default=10, help="queries shown at each end (default: 10)")
    add_common(q)
    q.set_defaults(handler=cmd_show)


def cmd_import(args: argparse.Namespace) -> int:
    from searchgrade.engine.traffic.logs import LogOptions, import_log

    options = LogOptions(name=args.name, collection=args.collection, query_field=args.query_field,
                         time_field=args.time_field, user_field=args.user_field, count_field=args.count_field,
                         id_field=args.id_field, min_count=args.min_count, min_users=args.min_users,
                         fmt=args.format, replace=args.replace)
    s = import_log(open_store(args), args.log, options)
    seen = f", {s.first_seen:%Y-%m-%d} to {s.last_seen:%Y-%m-%d}" if s.first_seen and s.last_seen else ""
    print(f"{s.rows_read:,} rows ({s.layout}; columns {', '.join(f'{r}={c}' for r, c in s.columns.items())}): "
          f"{s.searches:,} searches of {s.queries:,} distinct queries{seen}", file=sys.stderr)
    print(s.floor_line(), file=sys.stderr)
    print(f"stored log {s.log_name}: {s.kept_queries:,} queries, {s.kept_searches:,} searches"
          + (f", {s.query_ids:,} query ids for clicks" if s.query_ids else "")
          + (f" (collection {s.collection_name})" if s.collection_name else ""), file=sys.stderr)
    for note in s.notes:
        print(f"note: {note}", file=sys.stderr)
    print(s.log_name)
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from searchgrade.engine.traffic.query_sets import SetOptions, create_query_set

    s = create_query_set(open_store(args), args.log, SetOptions(
        method=args.method, size=args.size, seed=args.seed, name=args.name, head_share=args.head_share,
        torso_share=args.torso_share, replace=args.replace))
    bands = ", ".join(f"{n:,} {b}" for b, n in s.by_band.items())
    print(f"query set {s.set_name}: {s.size:,} queries of log {s.log_name} ({s.method}; {bands}), carrying "
          f"{s.searches:,} of {s.log_searches:,} searches ({s.share:.1%})", file=sys.stderr)
    for note in s.notes:
        print(f"note: {note}", file=sys.stderr)
    print(s.set_name)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    store = open_store(args)
    logs, sets = store.query_logs(), store.query_sets()
    if not logs and not sets:
        print("no query logs yet; import one with `searchgrade queries import LOG`")
        return 0
    print(f"{'log':<28} {'collection':<16} {'queries':>10} {'searches':>12} {'floor':>9} {'clicks':>10}")
    for r in logs:
        floor = f"{r['min_count']}/{r['min_users']}"
        clicks = f"{r['click_pairs']:,}" if r["click_pairs"] else "-"
        print(f"{r['log_name']:<28} {r['collection_name'] or '-':<16} {r['kept_queries']:>10,} "
              f"{r['kept_searches']:>12,} {floor:>9} {clicks:>10}")
    if sets:
        print(f"\n{'query set':<36} {'log':<24} {'method':<11} {'queries':>8} {'traffic':>8}")
        for r in sets:
            share = r["searches"] / r["log_searches"] if r["log_searches"] else 0.0
            print(f"{r['set_name']:<36} {r['log_name']:<24} {r['method']:<11} {r['size']:>8,} {share:>8.1%}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from searchgrade.engine.traffic.query_sets import head_and_tail, set_queries

    store = open_store(args)
    if store.query_set_exists(args.name):
        record = store.query_set(args.name)
        print(f"query set {args.name}: {record['size']:,} queries of log {record['log_name']} ({record['method']}, "
              f"seed {record['seed']})")
        print(f"{'band':<6} {'searches':>10} {'weight':>12}  query")
        for q in set_queries(store, args.name):
            print(f"{q.band:<6} {q.searches:>10,} {q.weight:>12,.1f}  {q.text}")
        return 0
    log = store.query_log(args.name)
    ends = head_and_tail(store, args.name, args.n)
    print(f"log {args.name}: {log['kept_queries']:,} queries, {log['kept_searches']:,} searches "
          f"(privacy floor {log['min_count']}/{log['min_users']})")
    for part in ("head", "tail"):
        print(f"\n{part} (most searched first)" if part == "head" else f"\n{part} (least searched last)")
        for r in ends[part]:
            print(f"{r['rank']:>8,} {r['searches']:>10,} {r['share']:>7.2%}  {r['text']}")
    return 0
