"""Scale: full-text and ANN at 10k / 100k / 1M documents on this machine, side by side with baselines.

Synthetic collections are made from the sentences of the repository's SciFact and Cranfield copies
(2 to 12 random sentences per document, seeded) and written to --workdir (not committed); the
queries are those two collections' real queries. Every measurement runs in a child process, so
each build and each search reports its own peak RSS.

- full-text: our index (indexes/builtin/bm25.py) built by streaming the corpus file: build time, index size
  on disk, peak RSS; then query p50/p95 with rank_bm25's BM25Okapi side by side in one process,
  one query each in turn (so machine noise hits both alike), up to --rank-bm25-max documents, and
  the share of queries whose top 10 is identical.
- ANN (--ann): faiss flat (exact), HNSW and IVF over RANDOM UNIT VECTORS (speed and memory only:
  embedding 1M documents is not feasible on 2 cores, and random vectors say nothing about quality;
  their recall@10 against exact search is the worst case, real embeddings cluster) with the
  settings searchgrade uses: build time, query p50/p95, recall@10 vs exact, peak RSS.
- together (--together ivf): the largest full-text index opened and the ANN index built over as
  many random vectors in one process, both answering each query: the peak RSS of the two together
  (an upper bound for serving: it includes the ANN build's vectors and k-means).

    .venv/bin/python bench/bench_scale.py --sizes 10000,100000             # full-text, ~5 min
    .venv/bin/python bench/bench_scale.py --sizes 1000000 --rank-bm25-max 0 --ann --ann-sizes 1000000
    .venv/bin/python bench/bench_scale.py --sizes 1000000 --rank-bm25-max 0 --together ivf

The machine (cores, load average before and after) is printed with the results.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import machine  # noqa: E402

SOURCES = [ROOT / "demo" / "scifact", ROOT / "tests" / "data" / "cranfield"]


def sentences() -> list[str]:
    pool = []
    for folder in SOURCES:
        for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            text = json.loads(line).get("text", "")
            pool.extend(s for s in re.split(r"(?<=[.!?])\s+", text) if len(s) > 20)
    return pool


def queries(n: int, seed: int = 0) -> list[str]:
    texts = [json.loads(line)["text"] for folder in SOURCES
             for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    return random.Random(seed).sample(texts, min(n, len(texts)))


def corpus_file(workdir: Path, n_docs: int, seed: int = 0) -> Path:
    """A BEIR-style corpus.jsonl of n_docs synthetic documents (made once, then reused)."""
    path = workdir / f"synthetic-{n_docs}" / "corpus.jsonl"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    pool, rng = sentences(), random.Random(seed)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        for i in range(n_docs):
            text = " ".join(rng.choice(pool) for _ in range(rng.randint(2, 12)))
            out.write(json.dumps({"_id": f"s{i}", "title": "", "text": text}) + "\n")
    os.replace(tmp, path)
    return path


def stream(path: Path):
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            yield doc["_id"], doc["text"]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """User + system CPU seconds of this process so far (all its threads): what a build costs when
    other work shares the cores, where wall time says more about the neighbours than about us."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentiles(values: list[float]) -> tuple[float, float]:
    import numpy as np

    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


# -- children: each prints one JSON line -------------------------------------------------------


def child_fulltext_build(corpus: Path, index_dir: Path, n_docs: int) -> dict:
    from searchgrade.indexes.builtin.bm25 import build_bm25_index
    from searchgrade.indexes.builtin.fulltext import FulltextSearcher

    start = time.perf_counter()
    index = build_bm25_index(stream(corpus), index_dir, total=n_docs)
    FulltextSearcher(index)  # the weights of the default (k1, b), as a run computes them
    seconds = time.perf_counter() - start
    size = sum(p.stat().st_size for p in index_dir.iterdir() if p.is_file())
    return {"build_s": seconds, "build_cpu_s": cpu_s(), "index_mb": size / 2**20, "postings": index.postings,
            "terms": len(index.vocab), "build_peak_rss_mb": peak_rss_mb()}


def child_fulltext_search(index_dir: Path, corpus: Path, n_queries: int, with_reference: bool) -> dict:
    from searchgrade.indexes.builtin.bm25 import Bm25Index
    from searchgrade.indexes.builtin.fulltext import FulltextSearcher, tokenize

    searcher = FulltextSearcher(Bm25Index.load(index_dir))
    texts = queries(n_queries)
    searcher.search_one("warm up", 10)
    ours, reference_s, same = [], [], 0
    reference = None
    if with_reference:
        import numpy as np
        from rank_bm25 import BM25Okapi

        from searchgrade.indexes.base import top_k

        start = time.perf_counter()
        reference = BM25Okapi([tokenize(text) for _, text in stream(corpus)])
        reference_fit_s = time.perf_counter() - start
    for text in texts:
        start = time.perf_counter()
        hits = searcher.search_one(text, 10)
        ours.append(time.perf_counter() - start)
        if reference is not None:
            start = time.perf_counter()
            scores = reference.get_scores(tokenize(text))
            matched = np.flatnonzero(scores)
            rows = matched[top_k(scores[matched], 10)]
            reference_s.append(time.perf_counter() - start)
            same += [searcher.doc_ids[r] for r in rows] == [h.doc_id for h in hits]
    out = {"queries": len(texts), "p50_ms": percentiles(ours)[0] * 1e3, "p95_ms": percentiles(ours)[1] * 1e3,
           "search_peak_rss_mb": peak_rss_mb()}
    if reference is not None:
        p50, p95 = percentiles(reference_s)
        out.update(rank_bm25_fit_s=reference_fit_s, rank_bm25_p50_ms=p50 * 1e3, rank_bm25_p95_ms=p95 * 1e3,
                   identical_top10=same, ratio_p50=p50 / percentiles(ours)[0])
    return out


def child_ann(kind: str, n_docs: int, dim: int, n_queries: int) -> dict:
    import numpy as np

    from searchgrade.indexes.builtin.ann import build_ann_index
    from searchgrade.indexes.settings import IndexSettings

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n_docs, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    probes = rng.standard_normal((n_queries, dim), dtype=np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    start, cpu_start = time.perf_counter(), cpu_s()
    index = build_ann_index(vectors, IndexSettings(ann_index=kind))
    build_s, build_cpu_s = time.perf_counter() - start, cpu_s() - cpu_start
    exact = build_ann_index(vectors, IndexSettings(ann_index="flat")) if kind != "flat" else index
    del vectors
    latencies, found = [], 0
    for probe in probes:
        start = time.perf_counter()
        _, rows = index.search(probe[None, :], 10)
        latencies.append(time.perf_counter() - start)
        _, truth = exact.search(probe[None, :], 10)
        found += len(set(rows[0].tolist()) & set(truth[0].tolist()))
    p50, p95 = percentiles(latencies)
    return {"build_s": build_s, "build_cpu_s": build_cpu_s, "p50_ms": p50 * 1e3, "p95_ms": p95 * 1e3,
            "recall_at_10": found / (10 * n_queries), "peak_rss_mb": peak_rss_mb()}


def child_together(index_dir: Path, kind: str, n_docs: int, dim: int, n_queries: int) -> dict:
    """The full-text index opened and an ANN index built in one process, both answering queries."""
    import numpy as np

    from searchgrade.indexes.builtin.ann import build_ann_index
    from searchgrade.indexes.builtin.bm25 import Bm25Index
    from searchgrade.indexes.builtin.fulltext import FulltextSearcher
    from searchgrade.indexes.settings import IndexSettings

    searcher = FulltextSearcher(Bm25Index.load(index_dir))
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n_docs, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = build_ann_index(vectors, IndexSettings(ann_index=kind))
    del vectors
    probes = rng.standard_normal((n_queries, dim), dtype=np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    latencies = []
    for text, probe in zip(queries(n_queries), probes, strict=False):
        start = time.perf_counter()
        searcher.search_one(text, 10)
        index.search(probe[None, :], 10)
        latencies.append(time.perf_counter() - start)
    p50, p95 = percentiles(latencies)
    return {"queries": len(latencies), "p50_ms": p50 * 1e3, "p95_ms": p95 * 1e3, "peak_rss_mb": peak_rss_mb()}


def run_child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                          check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="full-text corpus sizes (0 or '' for none)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rank-bm25-max", type=int, default=100_000,
                        help="run rank_bm25 side by side up to this many documents")
    parser.add_argument("--rank-bm25-queries", type=int, default=60,
                        help="queries for the side-by-side run (rank_bm25 takes ~1 s each at 100k)")
    parser.add_argument("--ann", action="store_true", help="also the ANN speed figures (random vectors)")
    parser.add_argument("--ann-sizes", default="100000,1000000")
    parser.add_argument("--ann-kinds", default="flat,hnsw,ivf")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--together", metavar="KIND",
                        help="also open the largest full-text index and build an ANN index of KIND "
                             "(e.g. ivf) over as many random vectors in one process: peak RSS of both")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/searchgrade-bench-scale"))
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        kind, *rest = args.child
        if kind == "fulltext-build":
            out = child_fulltext_build(Path(rest[0]), Path(rest[1]), int(rest[2]))
        elif kind == "fulltext-search":
            out = child_fulltext_search(Path(rest[0]), Path(rest[1]), int(rest[2]), rest[3] == "1")
        elif kind == "together":
            out = child_together(Path(rest[0]), rest[1], int(rest[2]), int(rest[3]), int(rest[4]))
        else:
            out = child_ann(rest[0], int(rest[1]), int(rest[2]), int(rest[3]))
        print(json.dumps(out))
        return 0

    print(f"machine before: {machine()}")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip() and int(s)]
    for n_docs in sizes:
        corpus = corpus_file(args.workdir, n_docs)
        index_dir = args.workdir / f"synthetic-{n_docs}" / "bm25"
        built = run_child("fulltext-build", str(corpus), str(index_dir), str(n_docs))
        print(f"full-text {n_docs:>9,} docs: build {built['build_s']:.1f} s (CPU {built['build_cpu_s']:.1f} s), "
              f"index {built['index_mb']:.0f} MB "
              f"({built['postings']:,} postings, {built['terms']:,} terms), build peak RSS "
              f"{built['build_peak_rss_mb']:.0f} MB")
        searched = run_child("fulltext-search", str(index_dir), str(corpus), str(args.queries), "0")
        print(f"    ours alone: {searched['queries']} queries, p50 {searched['p50_ms']:.2f} ms, "
              f"p95 {searched['p95_ms']:.2f} ms, search peak RSS {searched['search_peak_rss_mb']:.0f} MB")
        if n_docs <= args.rank_bm25_max:
            both = run_child("fulltext-search", str(index_dir), str(corpus), str(args.rank_bm25_queries), "1")
            print(f"    side by side ({both['queries']} queries, in turn): ours p50 {both['p50_ms']:.2f} ms "
                  f"p95 {both['p95_ms']:.2f} ms | rank_bm25 p50 {both['rank_bm25_p50_ms']:.1f} ms p95 "
                  f"{both['rank_bm25_p95_ms']:.1f} ms (fit {both['rank_bm25_fit_s']:.1f} s) | "
                  f"x{both['ratio_p50']:.0f} at p50 | identical top 10: {both['identical_top10']}/{both['queries']}")
    if args.ann:
        for n_docs in [int(s) for s in args.ann_sizes.split(",") if s.strip()]:
            for kind in args.ann_kinds.split(","):
                out = run_child("ann", kind, str(n_docs), str(args.dim), str(min(args.queries, 200)))
                print(f"ANN {kind:5s} {n_docs:>9,} random unit vectors (dim {args.dim}): build "
                      f"{out['build_s']:.1f} s (CPU {out['build_cpu_s']:.1f} s), p50 {out['p50_ms']:.2f} ms, "
                      f"p95 {out['p95_ms']:.2f} ms, "
                      f"recall@10 vs exact {out['recall_at_10']:.3f} (random vectors: worst case), "
                      f"peak RSS {out['peak_rss_mb']:.0f} MB")
    if args.together and sizes:
        n_docs = max(sizes)
        index_dir = args.workdir / f"synthetic-{n_docs}" / "bm25"
        out = run_child("together", str(index_dir), args.together, str(n_docs), str(args.dim),
                        str(min(args.queries, 200)))
        print(f"full-text index + ANN {args.together} over {n_docs:,} random unit vectors in one process: "
              f"peak RSS {out['peak_rss_mb']:.0f} MB; both searched, {out['queries']} queries, p50 "
              f"{out['p50_ms']:.2f} ms, p95 {out['p95_ms']:.2f} ms")
    print(f"machine after: {machine()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
