"""The `searchgrade` command line.

Each command (or small group of commands) is a module of this package with an
``add_commands(subparsers)`` that adds its subcommands and sets ``handler`` on each; ``COMMANDS``
lists those modules, in the order ``--help`` shows them. A new command is a new module plus one
line in ``COMMANDS``. Options several commands share are in ``options``; progress bars and notes
in ``output``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from searchgrade.cli import (
    app,
    clicks,
    embeddings,
    evaluate,
    export_index,
    gate,
    import_vectors,
    index,
    judge_pool,
    judges,
    labels,
    mcp,
    queries,
    show,
    suite,
    train_reranker,
    tune,
    worker,
)
from searchgrade.core.records import SearchGradeError

#: Command modules by name, in the order `searchgrade --help` lists their subcommands.
COMMANDS = {
    "index": index,  # index
    "import-vectors": import_vectors,  # import-vectors
    "embeddings": embeddings,  # embeddings distill
    "evaluate": evaluate,  # evaluate, resume
    "show": show,  # runs, show, export
    "labels": labels,  # labels list|export|import, rescore
    "queries": queries,  # queries import|sample|list|show
    "clicks": clicks,  # clicks import|import-interleaving|show
    "judge-pool": judge_pool,  # judge-pool
    "judges": judges,  # judges
    "gate": gate,  # gate
    "export-index": export_index,  # export-index
    "train-reranker": train_reranker,  # train-reranker
    "suite": suite,  # suite create|list|show|run|delete|update|schedule|alert|note
    "worker": worker,  # worker
    "tune": tune,  # tune
    "app": app,  # app
    "mcp": mcp,  # mcp
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, as for every expected error; --help still gives the full usage.
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="searchgrade", description="Tells you how good your search is.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in COMMANDS.values():
        module.add_commands(sub)
    return parser


#: The exit code of a command whose reader closed the pipe (``| head``): a shell's for SIGPIPE.
CLOSED_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = args.handler(args)
        sys.stdout.flush()  # inside the try: a closed pipe surfaces here, not at exit
        return code
    except SearchGradeError as exc:
        print(f"searchgrade: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("searchgrade: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _closed_pipe()


def _closed_pipe() -> int:
    """The reader of stdout went away (``searchgrade queries show LOG | head``): stop quietly, as
    command-line tools do. What is still buffered would fail again when Python flushes stdout at
    exit, so stdout is pointed at the null device first (Python's documented recipe)."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # no file descriptor (a test's captured stdout): nothing to redirect
        pass
    return CLOSED_PIPE
