"""`searchgrade index`: build or reuse the indexes of a collection."""

from __future__ import annotations

import argparse

from searchgrade.cli.options import (
    add_collection,
    add_common,
    add_index_options,
    declared,
    index_settings,
    load,
    strategies,
)
from searchgrade.cli.output import Bars, print_notes
from searchgrade.core.records import collection_fingerprint
from searchgrade.engine.paths import data_dir


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index", help="build or reuse the indexes of a collection")
    add_collection(p)
    add_index_options(p)
    add_common(p)
    p.set_defaults(handler=cmd_index)


def cmd_index(args: argparse.Namespace) -> int:
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.indexes.build import build_searchers

    declarations = declared(args)
    config = RunConfig(declared=declarations)
    registry = config.registry()
    names = strategies(args, registry)
    config = RunConfig(declared=declarations, strategies=names)
    config.check_environment()
    collection = load(args)
    bars = Bars()
    try:
        built = build_searchers(collection, index_settings(args), data_dir(args.data_dir),
                                strategies=names, progress=bars,
                                collection_fingerprint=collection_fingerprint(collection),
                                registry=registry)
    finally:
        bars.close()
    print_notes(collection.notes, built.skipped)
    print(f"{collection.name}: {len(collection.documents)} documents; ready: "
          f"{', '.join(built.searchers) or 'none'}")
    for stage, seconds in built.timings.items():
        print(f"  {stage}: {seconds:.1f} s")
    return 0
