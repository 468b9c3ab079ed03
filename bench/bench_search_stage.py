"""The search stage, shared candidates vs each strategy on its own, side by side in one run.

Before the executor (indexes/executor.py), the pipeline ran each strategy's ``search`` in turn:
hybrid searched ANN and BM25 again, each reranked strategy searched its base again and scored its
candidates with the cross-encoder even when another reranked strategy had scored the same pair,
and every query was embedded on its own, once per strategy that needed it. This bench runs both
on the same built indexes and queries, checks that they give the same lists (ids in order; scores
to 1e-4), and times them, alternating, ``--repeats`` times.

The reranker: the packaged all-MiniLM-L6-v2 body with a fresh one-logit head (a real 6-layer
cross-encoder's compute; its ranking means nothing, this bench only times it). No cross-encoder
can be downloaded here.

    .venv/bin/python bench/bench_search_stage.py [--queries 50] [--repeats 3] [--rerank-depth 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import machine  # noqa: E402
from searchgrade.engine.collections import load_collection  # noqa: E402
from searchgrade.indexes.base import QueryBatch  # noqa: E402
from searchgrade.indexes.build import build_searchers  # noqa: E402
from searchgrade.indexes.builtin.hybrid import HybridSearcher  # noqa: E402
from searchgrade.indexes.executor import Executor  # noqa: E402
from searchgrade.indexes.rerank.cross_encoder import RerankSearcher  # noqa: E402
from searchgrade.indexes.settings import IndexSettings  # noqa: E402

DEMO = ROOT / "demo" / "scifact"
STRATEGIES = ["ann", "fulltext", "hybrid", "ann_rerank", "fulltext_rerank", "hybrid_rerank"]


def make_reranker(folder: Path) -> Path:
    import torch
    from sentence_transformers import CrossEncoder

    from searchgrade.indexes.embeddings.encoder import resolve_model

    torch.manual_seed(0)
    model = CrossEncoder(resolve_model("sentence-transformers/all-MiniLM-L6-v2"), num_labels=1)
    model.save_pretrained(str(folder))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rerank-depth", type=int, default=IndexSettings().rerank_depth,
                        help="candidates each reranked strategy rescores (a smaller one keeps the bench "
                        "short on a loaded machine; it is printed with the figures)")
    args = parser.parse_args()

    collection = load_collection(DEMO)
    queries = collection.queries[: args.queries]
    texts = [q.text for q in queries]
    ids = [q.query_id for q in queries]
    with tempfile.TemporaryDirectory() as tmp:
        reranker = make_reranker(Path(tmp) / "reranker")
        settings = IndexSettings(reranker_model=str(reranker), rerank_depth=args.rerank_depth)
        built = build_searchers(collection, settings, Path(tmp) / "data", strategies=STRATEGIES)
        ctx = built.context
        shared = ctx.scorer()  # the executor's shared (query, document) scores, built once
        model = shared.scorer.model
        ann, fulltext = ctx.ann(), ctx.fulltext()
        hybrid = HybridSearcher(ann, fulltext, settings.rrf_k, settings.fusion_depth)
        alone = {"ann": ann, "fulltext": fulltext, "hybrid": hybrid,
                 "ann_rerank": RerankSearcher(ann, model, ctx.contents, settings.rerank_depth, settings.batch_size),
                 "fulltext_rerank": RerankSearcher(fulltext, model, ctx.contents, settings.rerank_depth,
                                                   settings.batch_size),
                 "hybrid_rerank": RerankSearcher(hybrid, model, ctx.contents, settings.rerank_depth,
                                                 settings.batch_size)}

        def before() -> dict[str, list]:
            return {name: searcher.search(texts, args.k) for name, searcher in alone.items()}

        def after() -> dict[str, list]:
            shared.scores.clear()  # a cold score cache each repeat, as in a new run
            shared.scored = shared.reused = 0  # so the counts below are one run's
            return Executor(built.nodes, STRATEGIES, args.k).run(QueryBatch(ids, texts)).hits

        print(f"machine: {machine()}")
        print(f"SciFact demo, {len(queries)} queries, k = {args.k}, rerank depth {settings.rerank_depth}, "
              f"strategies: {', '.join(STRATEGIES)}")
        before(), after()  # warm-up: models and indexes loaded, caches of the OS filled
        times = {"each strategy on its own": [], "shared (executor)": []}
        lists = {}
        for _ in range(args.repeats):
            for label, fn in (("each strategy on its own", before), ("shared (executor)", after)):
                start = time.perf_counter()
                lists[label] = fn()
                times[label].append(time.perf_counter() - start)
        a, b = lists["each strategy on its own"], lists["shared (executor)"]
        same_ids = all([d.doc_id for d in x.docs] == [d.doc_id for d in y.docs]
                       for s in STRATEGIES for x, y in zip(a[s], b[s], strict=True))
        same_scores = all(np.allclose([d.score for d in x.docs], [d.score for d in y.docs], atol=1e-4)
                          for s in STRATEGIES for x, y in zip(a[s], b[s], strict=True))
        for label, values in times.items():
            print(f"  {label:26s} median {statistics.median(values):7.2f} s  (runs: "
                  f"{', '.join(f'{v:.2f}' for v in values)})")
        ratio = statistics.median(times["each strategy on its own"]) / statistics.median(times["shared (executor)"])
        print(f"  speed-up: {ratio:.2f}x; same ids in the same order: {same_ids}; same scores (1e-4): {same_scores}")
        # Each reranked strategy rescores its base's top max(depth, k) (indexes/rerank/cross_encoder.py).
        rescored = max(settings.rerank_depth, args.k)
        print(f"  cross-encoder pairs per run: shared {shared.scored} scored ({shared.reused} reused), "
              f"on their own {3 * rescored * len(queries)} (3 x max(depth, k) x queries)")
        print(f"machine after: {machine()}")


if __name__ == "__main__":
    main()
