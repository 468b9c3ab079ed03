"""`searchgrade labels list|export|import` and `searchgrade rescore`: human labels in and out of the
store, and a new run from a stored one with the latest labels."""

from __future__ import annotations

import argparse
import sys

from searchgrade.cli.options import add_common, open_store


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("labels", help="human labels of a collection: list, export, import")
    labels = p.add_subparsers(dest="labels_command", required=True, parser_class=type(p))

    q = labels.add_parser("list", help="collections with labels: ratings, rated pairs, raters")
    add_common(q)
    q.set_defaults(handler=cmd_list)

    q = labels.add_parser("export", help="write a collection's labels as TREC qrels or CSV")
    q.add_argument("collection", help="the collection name (as `searchgrade runs` shows it)")
    q.add_argument("--source", choices=("human", "llm", "both"), default="human",
                   help="people's labels, the judge's grades, or both with people first (default: human)")
    q.add_argument("--format", choices=("trec", "csv"), default="trec",
                   help="TREC qrels (qid 0 docid grade) or CSV with a source column (default: trec)")
    q.add_argument("--out", required=True, help="the file to write")
    add_common(q)
    q.set_defaults(handler=cmd_export)

    q = labels.add_parser("import", help="store a qrels or CSV file's labels as a collection's human labels")
    q.add_argument("file", help="TREC qrels, BEIR qrels TSV, or CSV with query_id, doc_id, grade")
    q.add_argument("--collection", required=True, help="the collection name the labels belong to")
    q.add_argument("--rater", help="who made them (default: import:<file name>)")
    q.add_argument("--format", choices=("auto", "trec", "beir", "csv"), default="auto")
    add_common(q)
    q.set_defaults(handler=cmd_import)

    p = sub.add_parser("rescore", help="a new run from a stored run's results with the latest human "
                       "labels (no search, no LLM call)")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("--name", help="name of the new run (default: the parent's, '· re-scored')")
    add_common(p)
    p.set_defaults(handler=cmd_rescore)


def cmd_list(args: argparse.Namespace) -> int:
    rows = open_store(args).label_counts()
    if not rows:
        print("no labels yet; rate results in the app, or `searchgrade labels import FILE --collection NAME`")
        return 0
    print(f"{'collection':<24} {'ratings':>8} {'pairs':>8} {'raters':>7}  latest (UTC)")
    for r in rows:
        print(f"{r['collection_name']:<24} {r['ratings']:>8} {r['pairs']:>8} {r['raters']:>7}  "
              f"{r['latest']:%Y-%m-%d %H:%M:%S}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from searchgrade.engine.labels.files import export_labels

    path, n = export_labels(open_store(args), args.collection, args.source, args.format, args.out)
    print(f"{n} {args.source} labels of {args.collection} written", file=sys.stderr)
    print(path)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from searchgrade.engine.labels.files import import_labels

    store = open_store(args)
    summary = import_labels(store, args.file, args.collection, rater=args.rater, fmt=args.format)
    print(f"{summary.labels} labels ({summary.pairs} pairs, {summary.queries} queries, {summary.fmt}) "
          f"stored for collection {args.collection}", file=sys.stderr)
    if not store.list_runs(args.collection):
        print(f"note: no run of a collection named {args.collection!r} yet; the labels apply to runs of "
              "a collection by that name", file=sys.stderr)
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    from searchgrade.cli.show import print_table
    from searchgrade.engine.labels.rescore import rescore_run
    from searchgrade.viewmodels.results import keep_first_view

    store = open_store(args)
    run_id = rescore_run(store, store.get_run(args.run).run_id, name=args.name, on_complete=keep_first_view)
    print_table(store, run_id, None, sys.stderr)
    print(run_id)
    return 0
