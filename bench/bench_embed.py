"""Embedding backends side by side: docs/s of each against plain `encode`, and their vectors' agreement.

Speed: every backend embeds the same sample of documents (seeded) through
``indexes.embeddings.encoder.encode`` in the chunks ``encode_cached`` uses, in one process, the backends'
order rotated at each repeat; the medians of the repeats and the ratio to the ``torch`` backend (the
plain sentence-transformers ``encode``, the baseline) are printed, with the per-repeat ratios (each
repeat runs the backends back to back, so its ratio is the least disturbed by the neighbours).
Export time (first use of an ONNX backend) is reported apart and not counted.

Quality (``--ndcg``): for each backend, ``searchgrade evaluate COLLECTION --qrels --strategies ann``
through the real pipeline (documents and queries embedded by that backend, exact ANN search) in
``--data-dir``, and nDCG@10 over every query from the run store, against the ``torch`` run.

    .venv/bin/python bench/bench_embed.py --docs 500 --repeats 3                 # speed, the demo's SciFact
    .venv/bin/python bench/bench_embed.py --ndcg --data-dir /tmp/embed-ndcg      # nDCG@10 on all of SciFact

The machine (CPU, cores, load average before and after) is printed: on a shared machine the
ratios, not the absolute docs/s, are what to read.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import load, machine  # noqa: E402
from searchgrade.engine.collections import load_collection  # noqa: E402
from searchgrade.engine.paths import DEMO_DIR  # noqa: E402
from searchgrade.indexes.embeddings.backends import BACKENDS  # noqa: E402
from searchgrade.indexes.embeddings.encoder import PROGRESS_CHUNK, encode, load_embedder  # noqa: E402
from searchgrade.indexes.settings import DEFAULT_EMBEDDING_MODEL  # noqa: E402


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def embed(model: Any, texts: list[str], batch_size: int) -> np.ndarray:
    """As encode_cached encodes the texts it lacks: chunks of PROGRESS_CHUNK through encode."""
    return np.concatenate([encode(model, texts[i:i + PROGRESS_CHUNK], batch_size)
                           for i in range(0, len(texts), PROGRESS_CHUNK)])


def speed(args: argparse.Namespace, backends: list[str]) -> None:
    collection = load_collection(args.collection)
    rng = np.random.default_rng(args.seed)
    picked = rng.choice(len(collection.documents), min(args.docs, len(collection.documents)), replace=False)
    texts = [collection.documents[i].content for i in sorted(picked)]
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="bench-embed-"))
    print(f"machine: {machine('torch', 'onnxruntime')}, torch threads {torch_threads()}")
    print(f"sample: {len(texts)} documents of {collection.name} (seed {args.seed}), batch size "
          f"{args.batch_size}, {args.repeats} repeats, model {args.model}")
    models = {}
    for backend in backends:
        began = time.perf_counter()
        models[backend] = load_embedder(args.model, backend, "cpu", data_dir)
        embed(models[backend], texts[:16], args.batch_size)  # warm-up
        print(f"  {backend}: loaded (and exported if new) in {time.perf_counter() - began:.1f} s")
    seconds: dict[str, list[float]] = {b: [] for b in backends}
    vectors: dict[str, np.ndarray] = {}
    for repeat in range(args.repeats):
        order = backends[repeat % len(backends):] + backends[:repeat % len(backends)]
        for backend in order:
            began = time.perf_counter()
            vectors[backend] = embed(models[backend], texts, args.batch_size)
            seconds[backend].append(time.perf_counter() - began)
        print(f"  repeat {repeat + 1}: " + ", ".join(f"{b} {seconds[b][-1]:.1f} s" for b in backends)
              + f" (load {load()})", flush=True)
    base = "torch" if "torch" in backends else backends[0]
    print(f"\n{'backend':<11} {'median s':>9} {'docs/s':>8} {'ratio':>7} {'per-repeat ratios':>24}"
          f" {'cosine to ' + base + ' mean / min':>28}")
    for backend in backends:
        median = statistics.median(seconds[backend])
        ratio = statistics.median(seconds[base]) / median
        paired = [b / s for b, s in zip(seconds[base], seconds[backend], strict=True)]
        cosine = (vectors[backend] * vectors[base]).sum(axis=1)
        print(f"{backend:<11} {median:>9.1f} {len(texts) / median:>8.1f} {ratio:>6.2f}x "
              f"{' '.join(f'{r:.2f}' for r in paired):>24} {cosine.mean():>19.5f} / {cosine.min():.5f}")
    print(f"\nafter: load average {load()}")


def ndcg(args: argparse.Namespace, backends: list[str]) -> None:
    from searchgrade.engine.store import Store

    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="bench-embed-ndcg-"))
    print(f"machine: {machine('torch', 'onnxruntime')}, torch threads {torch_threads()}")
    figures = {}
    for backend in backends:
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "searchgrade.cli", "evaluate", str(args.collection), "--qrels",
             "--strategies", "ann", "--ann-index", "flat", "--embedding-model", args.model,
             "--embedding-backend", backend, "--device", "cpu", "--data-dir", str(data_dir),
             "--name", f"bench-embed-{backend}"],
            cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{backend}: evaluate failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        run_id = done.stdout.strip().splitlines()[-1]
        store = Store(data_dir)
        run = store.get_run(run_id)
        value = next(r["value"] for r in store.metric_summary(run_id, 10)
                     if r["metric"] == "ndcg" and r["strategy"] == "ann")
        index = run.stats.get("index", {})
        figures[backend] = value
        rate = index.get("embed_docs_per_s")
        print(f"{backend:<11} nDCG@10 {value:.4f} over {run.stats.get('queries')} queries, "
              f"{index.get('embedded')} documents embedded "
              f"({f'{rate:.1f} docs/s' if rate else 'from the cache'}), run {run_id}, "
              f"{time.perf_counter() - began:.0f} s (load {load()})", flush=True)
    base = figures.get("torch")
    if base is not None:
        for backend, value in figures.items():
            if backend != "torch":
                print(f"{backend}: nDCG@10 {value - base:+.4f} against torch (the aim: within 0.005)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, default=DEMO_DIR, help="a BEIR folder (default: the demo's SciFact)")
    parser.add_argument("--model", default=DEFAULT_EMBEDDING_MODEL)
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help=f"comma-separated, the baseline torch first (default: {','.join(BACKENDS)})")
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", help="where exported models (and, with --ndcg, runs and vectors) go")
    parser.add_argument("--ndcg", action="store_true", help="nDCG@10 of each backend through `evaluate` instead")
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        parser.error(f"unknown backend {unknown[0]!r}: use {', '.join(BACKENDS)}")
    (ndcg if args.ndcg else speed)(args, backends)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
