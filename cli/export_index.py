"""`searchgrade export-index`: load a collection into another search system (Milvus, Postgres with
pgvector, LanceDB), so that system's own search can be graded beside ours (and tests have a real one
of each)."""

from __future__ import annotations

import argparse
import sys

from searchgrade.cli.options import add_collection, add_common, load
from searchgrade.cli.output import Bars
from searchgrade.engine.paths import data_dir
from searchgrade.indexes.settings import IndexSettings

#: Systems export-index can load a collection into.
TARGETS = ("milvus", "postgres", "lancedb")
#: The options each target needs, besides --to.
NEEDS = {"milvus": ("uri", "target"), "postgres": ("dsn", "table"), "lancedb": ("uri", "table")}
FLAGS = {"uri": "--uri", "target": "--collection", "dsn": "--dsn", "table": "--table"}


def add_commands(sub: argparse._SubParsersAction) -> None:
    d = IndexSettings()
    p = sub.add_parser("export-index", help="load a collection (our embeddings, plus the system's own "
                       "full-text index on the text) into Milvus, Postgres (pgvector) or LanceDB, to grade "
                       "its search beside ours")
    add_collection(p)
    p.add_argument("--to", required=True, choices=TARGETS, help="the system to load it into")
    p.add_argument("--uri", help="milvus: a Milvus Lite file (e.g. ./milvus.db) or a server URL (e.g. "
                   "http://127.0.0.1:19530); lancedb: a local folder")
    p.add_argument("--collection", dest="target", metavar="NAME", help="milvus: the collection to create")
    p.add_argument("--dsn", help="postgres: a libpq connection string, e.g. postgresql://me@db/docs (a "
                   "password only as env:NAME: postgresql://me:env:PG_PASSWORD@db/docs)")
    p.add_argument("--table", metavar="NAME", help="postgres, lancedb: the table to create")
    p.add_argument("--text-config", default="english",
                   help="postgres: the text search configuration of the tsvector column (default: english)")
    p.add_argument("--replace", action="store_true", help="replace a collection or table of that name (the "
                   "new one is loaded aside and swapped in when complete: a failed load keeps the old one)")
    p.add_argument("--token-env", metavar="NAME", help="milvus: read the Milvus token from this environment variable")
    p.add_argument("--embedding-model", default=d.embedding_model,
                   help=f"model whose vectors are loaded (default: {d.embedding_model}); a dense "
                   "strategy on it embeds its queries with the same one")
    p.add_argument("--embedding-backend", default=d.embedding_backend, metavar="BACKEND",
                   help="what computes those vectors: torch, onnx or onnx-int8 (default: "
                   f"{d.embedding_backend}); recorded with the collection, and a run whose queries "
                   "another backend would embed is refused")
    p.add_argument("--device", default=d.device, help=f"where the torch backend embeds (default: {d.device})")
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--bm25-k1", type=float, default=d.bm25_k1)
    p.add_argument("--bm25-b", type=float, default=d.bm25_b)
    add_common(p)
    p.set_defaults(handler=cmd_export_index)


def cmd_export_index(args: argparse.Namespace) -> int:
    import os

    from searchgrade.core.records import SearchGradeError
    from searchgrade.indexes.build import document_vectors
    from searchgrade.indexes.declared.declaration import embedded_by

    for key in NEEDS[args.to]:
        if not getattr(args, key):
            raise SearchGradeError(f"--to {args.to} needs {FLAGS[key]}: e.g. "
                                   + {"milvus": "--uri ./milvus.db --collection scifact",
                                      "postgres": "--dsn postgresql://me@localhost/docs --table scifact",
                                      "lancedb": "--uri ./lancedb --table scifact"}[args.to])
    others = [FLAGS[key] for key in FLAGS if key not in NEEDS[args.to] and getattr(args, key)]
    if others:
        raise SearchGradeError(f"{others[0]} is not an option of --to {args.to}: it takes "
                               f"{' and '.join(FLAGS[key] for key in NEEDS[args.to])}")
    token = None
    if args.token_env:
        if args.to != "milvus":
            raise SearchGradeError("--token-env is Milvus's: a Postgres password goes in --dsn as env:NAME")
        token = os.environ.get(args.token_env)
        if not token:
            raise SearchGradeError(f"--token-env {args.token_env}: ${args.token_env} is not set: export it first")
    settings = IndexSettings(embedding_model=args.embedding_model, embedding_backend=args.embedding_backend,
                             device=args.device, batch_size=args.batch_size, bm25_k1=args.bm25_k1,
                             bm25_b=args.bm25_b)
    if args.to == "postgres":
        from searchgrade.indexes.declared.postgres import parse_dsn

        parse_dsn(args.dsn, "--dsn")  # a literal password stops here, before any work
    collection = load(args)
    embedding = embedded_by(settings.embedding_model, settings.embedding_backend)
    bars = Bars()
    try:
        vectors = document_vectors(collection, settings, data_dir(args.data_dir), progress=bars)
        if args.to == "milvus":
            from searchgrade.indexes.declared.milvus import export_collection

            done = export_collection(collection, vectors, args.uri, args.target, k1=settings.bm25_k1,
                                     b=settings.bm25_b, replace=args.replace, token=token, progress=bars,
                                     embedding=embedding)
        elif args.to == "postgres":
            from searchgrade.indexes.declared.postgres import export_table

            done = export_table(collection, vectors, args.dsn, args.table, replace=args.replace,
                                embedding=embedding, text_config=args.text_config, progress=bars)
        else:
            from searchgrade.indexes.declared.lancedb import export_table as export_lance

            done = export_lance(collection, vectors, args.uri, args.table, replace=args.replace,
                                embedding=embedding, progress=bars)
    finally:
        bars.close()
    print(_summary(args, collection.name, done, settings.embedding_model))
    if settings.embedding_backend != "torch":
        print(f"\nits dense and hybrid searches need the queries embedded alike: evaluate with "
              f"--embedding-backend {settings.embedding_backend}")
    return 0


def _summary(args: argparse.Namespace, name: str, done: dict, model: str) -> str:
    """What was loaded, and the strategy that searches it, in the strategies file's words."""
    if args.to == "milvus":
        if done["cut"]:
            print(f"note: {done['cut']} documents were longer than Milvus's 65,535-byte text field and "
                  "were cut", file=sys.stderr)
        return (f"{name}: {done['documents']} documents ({done['dim']}-dim vectors, BM25 on the text) loaded "
                f"into Milvus collection {done['collection']!r} at {done['uri']} in {done['seconds']:.1f} s\n"
                f"declare it as a strategy:\n\n[strategy.milvus-dense]\nkind = \"milvus\"\nuri = \"{args.uri}\"\n"
                f"collection = \"{args.target}\"\nsearch = \"dense\"   # or \"bm25\", \"hybrid\"\n"
                f"embedding_model = \"{model}\"")
    if args.to == "postgres":
        return (f"{name}: {done['documents']} documents ({done['dim']}-dim vectors with an HNSW index, a "
                f"tsvector column with a GIN index) loaded into Postgres table {done['table']!r} in "
                f"{done['seconds']:.1f} s\ndeclare it as a strategy:\n\n[strategy.pg-dense]\nkind = \"postgres\"\n"
                f"dsn = {_toml(args.dsn)}\ntable = \"{args.table}\"\nsearch = \"dense\"   # or \"fulltext\", "
                f"\"hybrid\"\nembedding_model = \"{model}\"")
    return (f"{name}: {done['documents']} documents ({done['dim']}-dim vectors, a full-text index on the text) "
            f"loaded into LanceDB table {done['table']!r} at {done['uri']} in {done['seconds']:.1f} s\n"
            f"declare it as a strategy:\n\n[strategy.lance-dense]\nkind = \"lancedb\"\nuri = {_toml(args.uri)}\n"
            f"table = \"{args.table}\"\nsearch = \"dense\"   # or \"fulltext\", \"hybrid\"\n"
            f"embedding_model = \"{model}\"")


def _toml(value: str) -> str:
    import json

    return json.dumps(value)  # a TOML basic string is a JSON string
