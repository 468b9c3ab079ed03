"""Train a domain reranker on a collection's qrels and measure it on queries it never saw.

For each collection: a qrels run of the base strategies (ann, fulltext, hybrid), then
``train_reranker`` with 5 query-disjoint folds: each query is reranked only by the model trained on
the other folds (cross-fitting). Prints the training time on this machine and, per base strategy,
nDCG@10 (and DCG@10) of the base vs the same strategy reranked by the trained model, with paired
paired bootstrap intervals and p-values adjusted over the strategies (engine/statistics/paired.py), the machine and its load average before and after.

    .venv/bin/python bench/bench_train_reranker.py                         # scifact (demo) and cranfield
    .venv/bin/python bench/bench_train_reranker.py --collections cranfield --max-length 96

Without --data-dir the artifacts go to a temporary folder (cranfield's 1,400 documents are embedded
once there, ~2 minutes; scifact uses the demo's shipped vectors). The reranker cards land in
DATA_DIR/rerankers/<collection>-bench/ (card.json, README.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import machine  # noqa: E402
from searchgrade.engine.collections import load_collection  # noqa: E402
from searchgrade.engine.run.config import RunConfig  # noqa: E402
from searchgrade.engine.run.pipeline import run_evaluation  # noqa: E402
from searchgrade.engine.run.strategies import base_strategies  # noqa: E402
from searchgrade.engine.store import Store  # noqa: E402
from searchgrade.engine.training.pairs import NegativeSampling  # noqa: E402
from searchgrade.engine.training.reranker import (  # noqa: E402
    DEFAULT_DEPTH,
    RerankerTrainingConfig,
    train_reranker,
)
from searchgrade.engine.training.trainer import TrainingSettings  # noqa: E402
from searchgrade.indexes.settings import IndexSettings  # noqa: E402

COLLECTIONS = {
    "scifact": ROOT / "demo" / "scifact",
    "cranfield": ROOT / "tests" / "data" / "cranfield",
}


def _progress(stage: str, done: int, total: int) -> None:
    """Each stage's first steps (to see the pace early), then every tenth, with the time."""
    if done <= 5 or done == total or done % max(1, total // 10) == 0:
        print(f"  {time.strftime('%H:%M:%S')} {stage}: {done}/{total}", file=sys.stderr, flush=True)


def bench(name: str, path: Path, data_dir: Path, args: argparse.Namespace) -> dict:
    store = Store(data_dir)
    collection = load_collection(path)
    settings = IndexSettings(rerank_depth=max(args.depth, IndexSettings().rerank_depth))
    t0 = time.perf_counter()
    if args.run:
        run_id = store.get_run(args.run).run_id
    else:
        run_id = run_evaluation(collection, RunConfig(name=f"{name} bench", strategies=base_strategies(),
                                                      max_queries=args.max_queries, index=settings,
                                                      n_bootstrap=1000),
                                store, data_dir, progress=_progress).run_id
    evaluate_s = time.perf_counter() - t0
    print(f"{name}: run {run_id} (base strategies) in {evaluate_s:.0f} s", file=sys.stderr, flush=True)
    config = RerankerTrainingConfig(
        name=f"{name}-bench", folds=args.folds, replace=True, full_model=args.full_model,
        threads=args.threads, depth=args.depth,
        sampling=NegativeSampling(args.negatives, args.negative_first, args.negative_last),
        training=TrainingSettings(epochs=args.epochs, max_length=args.max_length,
                                  batch_size=args.batch_size, learning_rate=args.learning_rate,
                                  seed=args.seed,
                                  train_layers=None if args.train_layers < 0 else args.train_layers,
                                  body_layers=args.body_layers or None),
        blend=not args.no_blend,
    )
    reranker = train_reranker(store, run_id, data_dir, config, progress=_progress,
                              collection=collection)
    card = reranker.card
    print(f"\n== {name}: {card['heldout']['queries']} held-out queries, {card['folds']} folds, "
          f"evaluate (base strategies) {evaluate_s:.0f} s")
    t = card["timings"]
    steps = card["total_steps"]
    print(f"training {t['train_s']:.0f} s ({t['train_cpu_s']:.0f} CPU s) for {steps} steps "
          f"({t['train_s'] / steps:.2f} s/step, batch {config.training.batch_size}, max length "
          f"{config.training.max_length}, top {config.training.train_layers or 'all'} layers trained); "
          f"held-out scoring {t['score_s']:.0f} s ({t['score_cpu_s']:.0f} CPU s) for {t['scored_pairs']} "
          f"pairs; candidates {t['candidates_s']:.0f} s; total {t['total_s']:.0f} s")
    print(f"{'strategy':<10} {'metric':<8} {'base':>7} {'reranked':>9} {'change':>8} {'95% CI':>20} "
          f"{'p':>7} {'better/worse':>13}", flush=True)
    weights = {k: m.get("blend_weight") for k, m in card["models"].items()}
    print(f"blend weights: {weights}")
    for f in card["heldout"]["figures"] + [dict(f, strategy=f["strategy"] + " CE")
                                           for f in card["heldout"].get("cross_encoder_alone", [])]:
        print(f"{f['strategy']:<10} {f['metric'] + '@' + str(f['k']):<8} {f['base']:>7.4f} "
              f"{f['reranked']:>9.4f} {f['diff']:>+8.4f} [{f['ci_low']:+.4f},{f['ci_high']:+.4f}] "
              f"{f['p_value']:>7.4f} {f['improved']:>6}/{f['hurt']:<6}")
    print(f"machine: {card['machine']}", flush=True)
    return card


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", default="scifact,cranfield",
                        help="comma-separated: scifact, cranfield, or BEIR folder paths")
    parser.add_argument("--data-dir", type=Path, help="artifact root (default: a temporary folder)")
    parser.add_argument("--max-queries", type=int, help="a seeded sample of queries (quick run)")
    parser.add_argument("--run", help="train from this stored run instead of evaluating again "
                        "(one collection only)")
    d, s = TrainingSettings(), NegativeSampling()
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH,
                        help=f"candidates of each base strategy rescored (default: {DEFAULT_DEPTH})")
    parser.add_argument("--negatives", type=int, default=s.negatives)
    parser.add_argument("--negative-first", type=int, default=s.first)
    parser.add_argument("--negative-last", type=int, default=s.last)
    parser.add_argument("--epochs", type=float, default=d.epochs)
    parser.add_argument("--max-length", type=int, default=d.max_length)
    parser.add_argument("--batch-size", type=int, default=d.batch_size)
    parser.add_argument("--learning-rate", type=float, default=d.learning_rate)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--train-layers", type=int, default=d.train_layers,
                        help="top transformer layers trained (-1: all)")
    parser.add_argument("--body-layers", type=int, default=d.body_layers,
                        help=f"keep the body's first N layers (default: {d.body_layers}; 0: all)")
    parser.add_argument("--no-blend", action="store_true", help="the cross-encoder alone")
    parser.add_argument("--threads", type=int, help="torch threads for the whole bench (default: "
                        "torch's, one per core)")
    parser.add_argument("--full-model", action="store_true", help="also train the full model (timed)")
    parser.add_argument("--json", type=Path, help="write the cards here as JSON")
    args = parser.parse_args()

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)  # the evaluation too, not only the training
    print(f"machine: {machine('torch')}")
    tmp = None
    data_dir = args.data_dir
    if data_dir is None:
        tmp = data_dir = Path(tempfile.mkdtemp(prefix="bench-train-reranker-"))
    cards = {}
    try:
        for name in [c.strip() for c in args.collections.split(",") if c.strip()]:
            path = COLLECTIONS.get(name, Path(name))
            cards[name] = bench(name, path, data_dir, args)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(cards, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
