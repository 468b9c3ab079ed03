"""`searchgrade export-index`: load a collection into another search system (Milvus), so that
system's own search can be graded beside ours (and tests have a real Milvus)."""

from __future__ import annotations

import argparse
import sys

from searchgrade.cli.options import add_collection, add_common, load
from searchgrade.cli.output import Bars
from searchgrade.engine.paths import data_dir
from searchgrade.indexes.settings import IndexSettings

#: Systems export-index can load a collection into.
TARGETS = ("milvus",)


def add_commands(sub: argparse._SubParsersAction) -> None:
    d = IndexSettings()
    p = sub.add_parser("export-index", help="load a collection (our embeddings, plus the system's own "
                       "BM25 on the text) into Milvus, to grade its search beside ours")
    add_collection(p)
    p.add_argument("--to", required=True, choices=TARGETS, help="the system to load it into")
    p.add_argument("--uri", required=True, help="a Milvus Lite file (e.g. ./milvus.db) or a server "
                   "URL (e.g. http://127.0.0.1:19530)")
    p.add_argument("--collection", dest="target", required=True, metavar="NAME",
                   help="the Milvus collection to create")
    p.add_argument("--replace", action="store_true", help="replace a Milvus collection of that name (the new one is "
                   "loaded aside and swapped in when complete: a failed load keeps the old one)")
    p.add_argument("--token-env", metavar="NAME", help="read the Milvus token from this environment variable")
    p.add_argument("--embedding-model", default=d.embedding_model,
                   help=f"model whose vectors are loaded (default: {d.embedding_model}); a Milvus "
                   "strategy embeds its queries with the same one")
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
    from searchgrade.indexes.declared.milvus import embedded_by, export_collection

    token = None
    if args.token_env:
        token = os.environ.get(args.token_env)
        if not token:
            raise SearchGradeError(f"--token-env {args.token_env}: ${args.token_env} is not set: export it first")
    settings = IndexSettings(embedding_model=args.embedding_model, embedding_backend=args.embedding_backend,
                             device=args.device, batch_size=args.batch_size, bm25_k1=args.bm25_k1,
                             bm25_b=args.bm25_b)
    collection = load(args)
    bars = Bars()
    try:
        vectors = document_vectors(collection, settings, data_dir(args.data_dir), progress=bars)
        done = export_collection(collection, vectors, args.uri, args.target, k1=settings.bm25_k1,
                                 b=settings.bm25_b, replace=args.replace, token=token, progress=bars,
                                 embedding=embedded_by(settings.embedding_model, settings.embedding_backend))
    finally:
        bars.close()
    if done["cut"]:
        print(f"note: {done['cut']} documents were longer than Milvus's 65,535-byte text field and "
              "were cut", file=sys.stderr)
    print(f"{collection.name}: {done['documents']} documents ({done['dim']}-dim vectors, BM25 on the "
          f"text) loaded into Milvus collection {done['collection']!r} at {done['uri']} in "
          f"{done['seconds']:.1f} s")
    print(f"declare it as a strategy:\n\n[strategy.milvus-dense]\nkind = \"milvus\"\nuri = \"{args.uri}\"\n"
          f"collection = \"{args.target}\"\nsearch = \"dense\"   # or \"bm25\", \"hybrid\"\n"
          f"embedding_model = \"{settings.embedding_model}\"")
    if settings.embedding_backend != "torch":
        print(f"\nits dense and hybrid searches need the queries embedded alike: evaluate with "
              f"--embedding-backend {settings.embedding_backend}")
    return 0
