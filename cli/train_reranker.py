"""`searchgrade train-reranker RUN --name NAME`: a domain reranker from a run's grades."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from searchgrade.cli.options import add_common, open_store
from searchgrade.cli.output import Bars
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.statistics.paired import PairedDifference, interval_words

HELP = "train a reranker on a run's grades, measured on queries it never saw (cross-fitting)"


def add_commands(sub: argparse._SubParsersAction) -> None:
    from searchgrade.engine.training.pairs import NegativeSampling
    from searchgrade.engine.training.reranker import DEFAULT_DEPTH
    from searchgrade.engine.training.trainer import TrainingSettings

    d, s = TrainingSettings(), NegativeSampling()
    p = sub.add_parser("train-reranker", help=HELP, description=HELP)
    p.add_argument("run", help="run id (or an unambiguous prefix) whose grades train the reranker")
    p.add_argument("--name", required=True, help="the reranker's name; evaluate with "
                   "--reranker-model trained:NAME")
    p.add_argument("--folds", type=int, default=5, help="query-disjoint folds; each query is reranked "
                   "by the model trained on the other folds (default: 5)")
    p.add_argument("--base-model", default=d.base_model, help="the body: a local sentence-transformers "
                   "or cross-encoder folder (default: the packaged all-MiniLM-L6-v2, with a fresh head)")
    p.add_argument("--epochs", type=float, default=d.epochs, help=f"default: {d.epochs:g}")
    p.add_argument("--max-length", type=int, default=d.max_length,
                   help=f"tokens of query + document the model reads (default: {d.max_length})")
    p.add_argument("--batch-size", type=int, default=d.batch_size, help=f"default: {d.batch_size}")
    p.add_argument("--learning-rate", type=float, default=d.learning_rate, help=f"default: {d.learning_rate:g}")
    p.add_argument("--train-layers", default=_layers_text(d.train_layers),
                   help=f"top transformer layers trained, or 'all' (default: {_layers_text(d.train_layers)})")
    p.add_argument("--negatives", type=int, default=s.negatives,
                   help=f"unjudged candidates per query trained as not relevant (default: {s.negatives})")
    p.add_argument("--negative-ranks", default=f"{s.first}-{s.last}", metavar="FIRST-LAST",
                   help=f"ranks the negatives are drawn from (default: {s.first}-{s.last})")
    p.add_argument("--depth", type=int, help="candidates of each base strategy rescored, in the held-out "
                   "figures and in evaluations with this reranker (default: "
                   f"{DEFAULT_DEPTH}, or the run's --rerank-depth when smaller; deeper costs time)")
    p.add_argument("--no-blend", action="store_true",
                   help="rank by the cross-encoder alone (default: its score blended with the base "
                   "ranking, with a weight chosen on a fold the model did not train on)")
    p.add_argument("--full-model", action="store_true",
                   help="also train a model on every query, for queries no fold model saw (default: "
                   "such queries are scored by one fold model)")
    p.add_argument("--train-qrels", metavar="FILE", help="train on this qrels file's queries instead "
                   "(a separate training split); the run's queries are then all held out")
    p.add_argument("--train-queries", metavar="FILE", help="the texts of --train-qrels' queries "
                   "(default: the collection's queries.jsonl)")
    p.add_argument("--seed", type=int, default=d.seed, help=f"default: {d.seed}")
    p.add_argument("--threads", type=int, help="torch threads (default: one per core; on a machine "
                   "busy with other work, 1 can be much faster)")
    p.add_argument("--body-layers", default=_layers_text(d.body_layers), help="keep at most the body's "
                   f"first N transformer layers, or 'all' (default: {_layers_text(d.body_layers)}; fewer "
                   "cost less time)")
    p.add_argument("--replace", action="store_true", help="overwrite a reranker of the same name")
    add_common(p)
    p.set_defaults(handler=cmd_train_reranker)


def _layers_text(layers: int | None) -> str:
    return "all" if layers is None else str(layers)


def _negative_ranks(value: str) -> tuple[int, int]:
    first, sep, last = value.partition("-")
    if not sep or not first.strip().isdigit() or not last.strip().isdigit():
        raise SearchGradeError(f"--negative-ranks {value!r} must be FIRST-LAST, e.g. 11-50")
    return int(first), int(last)


def _layers(value: str, option: str = "--train-layers") -> int | None:
    """A whole number of layers, or None for 'all' (what the help and the error name)."""
    if value.strip().lower() == "all":
        return None
    if not value.strip().isdigit():
        raise SearchGradeError(f"{option} {value!r} must be a whole number or 'all'")
    return int(value)


def config_from_args(args: argparse.Namespace):
    from searchgrade.engine.training.pairs import NegativeSampling
    from searchgrade.engine.training.reranker import RerankerTrainingConfig
    from searchgrade.engine.training.trainer import TrainingSettings

    first, last = _negative_ranks(args.negative_ranks)
    return RerankerTrainingConfig(
        name=args.name, folds=args.folds, depth=args.depth, full_model=args.full_model,
        train_qrels=args.train_qrels, train_queries=args.train_queries, replace=args.replace,
        threads=args.threads, blend=not args.no_blend,
        sampling=NegativeSampling(args.negatives, first, last),
        training=TrainingSettings(base_model=args.base_model, epochs=args.epochs,
                                  max_length=args.max_length, batch_size=args.batch_size,
                                  learning_rate=args.learning_rate, seed=args.seed,
                                  train_layers=_layers(args.train_layers),
                                  body_layers=_layers(args.body_layers, "--body-layers")),
    )


def cmd_train_reranker(args: argparse.Namespace) -> int:
    """Train, print the held-out figures on stderr, and the reranker's name last on stdout."""
    import signal

    from searchgrade.engine.paths import data_dir
    from searchgrade.engine.training.reranker import TrainingStopped, train_reranker

    config = config_from_args(args)
    config.validate()
    store = open_store(args)
    bars = Bars()
    run_id = store.get_run(args.run).run_id
    try:
        reranker = train_reranker(store, run_id, data_dir(args.data_dir), config, progress=bars)
    except KeyboardInterrupt as exc:
        bars.close()
        how = (f"by {signal.Signals(exc.signum).name}" if isinstance(exc, TrainingStopped)
               else "by the user (Ctrl-C)")
        if isinstance(exc, TrainingStopped) and exc.saved:
            print(f"searchgrade: train-reranker stopped {how} as it finished: reranker "
                  f"{config.name!r} was saved; evaluate with --reranker-model trained:{config.name}",
                  file=sys.stderr)
        else:
            print(f"searchgrade: train-reranker stopped {how}: no reranker {config.name!r} was saved "
                  "(one trained before under that name is kept); run it again to train it",
                  file=sys.stderr)
        return 128 + (exc.signum if isinstance(exc, TrainingStopped) else signal.SIGINT)
    finally:
        bars.close()
    print_summary(reranker.card, reranker.folder, sys.stderr)
    print(f"trained:{reranker.name}")
    return 0


def print_summary(card: dict[str, Any], folder: Any, out: Any) -> None:
    held = card["heldout"]
    t = card["timings"]
    print(f"reranker {card['name']} ({card['mode']}, {card['folds'] or 'no'} folds) from run "
          f"{card['source_run']['run_id']}: trained in {t['train_s']:.0f} s, {t['total_s']:.0f} s in all; "
          f"model card: {folder}/README.md", file=out)
    print(f"measured on {held['queries']} queries the reranker never saw (top {held['depth']} rescored):",
          file=out)
    for f in held["figures"]:
        word = "significant" if f["significant"] else "not significant"
        print(f"  {f['strategy']:<10} {f['metric']}@{f['k']}: {f['base']:.4f} -> {f['reranked']:.4f} "
              f"({f['diff']:+.4f}, {interval_words(_difference(f))}, p={f['p_value']:.4f}, "
              f"{word})", file=out)
    for note in card.get("notes", []):
        print(f"note: {note}", file=out)


def _difference(figure: dict) -> PairedDifference:
    """A held-out figure of card.json as the one procedure's difference, for its words."""
    return PairedDifference(figure["diff"], figure["ci_low"], figure["ci_high"], figure["p_value"],
                            figure["n"], figure["m"])
