"""`searchgrade embeddings distill`: a model2vec static model from a sentence-transformers model."""

from __future__ import annotations

import argparse

from searchgrade.indexes.embeddings.distill import DEFAULT_DIMS


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("embeddings", help="make embedding models: `embeddings distill`")
    commands = p.add_subparsers(dest="embeddings_command", required=True, parser_class=type(p))
    d = commands.add_parser(
        "distill",
        help="distil a model2vec static model from a sentence-transformers model on disk",
        description="Runs MODEL once over its vocabulary and keeps one vector per token (model2vec): "
                    "the result embeds a text by averaging its tokens' vectors, hundreds of times faster "
                    "than the transformer on a CPU. Use the folder as embedding_model in a strategies "
                    "file or as --embedding-model. Nothing is downloaded when MODEL is on disk.")
    d.add_argument("model", metavar="MODEL",
                   help="the base model, as --embedding-model takes it (all-MiniLM-L6-v2: the packaged one)")
    d.add_argument("--out", required=True, metavar="DIR", help="a new folder for the static model")
    d.add_argument("--dims", type=int, default=DEFAULT_DIMS,
                   help=f"its dimensions, by PCA (default {DEFAULT_DIMS}; at most the base model's)")
    d.set_defaults(handler=cmd_distill)


def cmd_distill(args: argparse.Namespace) -> int:
    from searchgrade.indexes.embeddings.distill import distill_model

    made = distill_model(args.model, args.out, args.dims)
    print(f"distilled {made.base} into {made.out}: {made.vocabulary:,} token vectors of {made.dims} "
          f"dimensions in {made.seconds:.1f} s")
    print(f"use it with: embedding_model = \"{made.out}\" (a strategies file) or --embedding-model {made.out}")
    return 0
