"""`searchgrade import-vectors`: vectors made elsewhere, filed in the embedding cache."""

from __future__ import annotations

import argparse

from searchgrade.cli.options import add_collection, add_common, load
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.paths import data_dir


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-vectors",
        help="use document vectors computed elsewhere (a .parquet or .npz of doc id + vector)",
        description="Files each vector in the embedding cache under its document's text, so the "
                    "ANN index of COLLECTION is built from them instead of embedding here. The "
                    "queries are still embedded here, with the same model.")
    add_collection(p)
    p.add_argument("file", help=".parquet (id column + list-of-floats column) or .npz (ids, vectors)")
    p.add_argument("--embedding-model",
                   help="the model that made the vectors, as you will pass it to evaluate "
                        "(default: the model the file names in its metadata)")
    p.add_argument("--id-column", help="the file's id column or array (default: doc_id, id, _id or "
                   "corpus-id; ids for .npz)")
    p.add_argument("--vector-column", help="the file's vector column or array (default: vector, "
                   "embedding, vectors or embeddings)")
    p.add_argument("--ignore-unknown-ids", action="store_true",
                   help="import the ids that are documents of the collection and leave out the others")
    p.add_argument("--no-check", action="store_true",
                   help="do not compare a sample of the vectors with the model's own")
    add_common(p)
    p.set_defaults(handler=cmd_import_vectors)


def cmd_import_vectors(args: argparse.Namespace) -> int:
    from searchgrade.indexes.embeddings.encoder import load_embedder
    from searchgrade.indexes.embeddings.vector_files import import_vectors, model_for, read_vector_file

    collection = load(args)
    file = read_vector_file(args.file, args.id_column, args.vector_column)
    model = model_for(file, args.embedding_model)
    embedder, note = None, None
    if args.no_check:
        note = "not compared with the model (--no-check)"
    else:
        try:
            embedder = load_embedder(model)
        except SearchGradeError as exc:
            note = (f"not compared with the model, which cannot be loaded here ({exc}); the ANN "
                    "strategy needs it to embed the queries")
    report = import_vectors(collection, file, model, data_dir(args.data_dir),
                            ignore_unknown_ids=args.ignore_unknown_ids, embedder=embedder,
                            check_note=note)
    print(f"{report.matched:,} vectors of {report.dim} dimensions for {collection.name} filed under "
          f"{report.model} ({report.new:,} new"
          + (f"; {report.unknown:,} ids not in the collection left out" if report.unknown else "") + ")")
    if report.agreement is not None:
        print(f"  agree with the model's own vectors: mean cosine {report.agreement:.4f} on a sample")
    else:
        print(f"  {report.check_note}")
    missing = report.documents - report.covered
    print(f"  {report.covered:,} of {report.documents:,} documents have a vector"
          + (f"; the other {missing:,} will be embedded when the index is built" if missing else ""))
    return 0
