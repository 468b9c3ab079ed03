"""Chunked retrieval at 100,000 documents: build time, peak memory, query latency p50/p95.

The collection is SciFact (5,183 abstracts, 300 judged test queries) padded with synthetic
distractor documents up to --docs, each 6 to 14 random sentences (seeded) of the SciFact and
Cranfield copies in the repository, never one of a document judged relevant to a query: about 4
chunks of 128 tokens each, as the abstracts are (about 3.3). The static model is distilled from
the packaged all-MiniLM-L6-v2 here (`searchgrade embeddings distill`, --dims 256, made once in
--workdir): embedding ~400,000 chunks with the transformer on 2 CPU cores would take days, so its
time is projected from a timed sample of the same chunks.

One round (each in a new data directory, the collection and model kept in --workdir) is one child
`searchgrade evaluate COLLECTION --qrels` of:

- ``static-chunks``: the static model over chunks of 128 tokens (16 overlap), max aggregation (ann_index
  "auto" counts the chunks: an inverted file above 200,000);
- ``static-chunks-exact``: the same chunks searched exactly (``ann_index = "flat"``): the same
  chunking and vectors (nothing cut or embedded again), what the inverted file's approximation costs;
- ``static``: the same model over whole documents, for scale;
- ``fulltext``: the built-in BM25.

Printed: wall, CPU and peak RSS of the evaluate (GNU time), each strategy's cost figures from
`show --format json` (index build seconds, chunks embedded per second, index bytes, p50/p95 ms,
chunks per document), nDCG@10, and the transformer's projected embedding time; the machine and the
load before and after. A second round (--rounds 2) shows the same run with every vector cached.

    .venv/bin/python bench/bench_chunked_scale.py                 # 100k documents, 1 round
    .venv/bin/python bench/bench_chunked_scale.py --docs 20000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_judged_scale import distractor_sentences  # noqa: E402
from bench.machine import load, machine  # noqa: E402

SCIFACT = ROOT / "demo" / "scifact"
STRATEGIES = "static-chunks,static-chunks-exact,static,fulltext"
CHUNKING = '{ method = "tokens", size = 128, overlap = 16 }'


def write_collection(folder: Path, n_docs: int, seed: int = 0) -> None:
    if (folder / "corpus.jsonl").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("queries.jsonl", "qrels.tsv"):
        shutil.copy(SCIFACT / name, folder / name)
    pool, rng = distractor_sentences(), random.Random(seed)
    scifact = (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8")
    tmp = folder / "corpus.jsonl.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(scifact if scifact.endswith("\n") else scifact + "\n")
        for i in range(n_docs - scifact.count("\n")):
            text = " ".join(rng.choice(pool) for _ in range(rng.randint(6, 14)))
            out.write(json.dumps({"_id": f"pad{i}", "title": "", "text": text}) + "\n")
    os.replace(tmp, folder / "corpus.jsonl")


def searchgrade(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "searchgrade.cli", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"searchgrade {' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()[-1500:]}")
    return done.stdout


def timed(*args: str) -> dict:
    """One searchgrade command as a child: wall, CPU and peak RSS (GNU time), and its stdout."""
    report = Path(tempfile.mkstemp(prefix="sg-time-")[1])
    began = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", str(report), sys.executable, "-m",
                           "searchgrade.cli", *args], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()[-1500:]}")
    _elapsed, user, system, rss_kb = report.read_text().split()[-4:]
    report.unlink()
    return {"wall_s": wall, "cpu_s": float(user) + float(system), "peak_rss_mb": int(rss_kb) / 1024,
            "stdout": done.stdout}


def projected_transformer(collection: Path, sample: int) -> str:
    """all-MiniLM-L6-v2's chunks per second on a sample of this collection's chunks, and the hours
    the whole collection's chunks would take at that rate."""
    from searchgrade.engine.collections import load_collection
    from searchgrade.indexes.chunking.chunks import load_or_cut
    from searchgrade.indexes.chunking.spec import Chunking
    from searchgrade.indexes.chunking.splitter import model_tokenizer
    from searchgrade.indexes.embeddings.encoder import encode, load_embedder

    documents = load_collection(collection).documents
    model = load_embedder("all-MiniLM-L6-v2")
    picked = random.Random(0).sample(documents, min(len(documents), sample))
    chunks, _ = load_or_cut(picked, Chunking("tokens", 128, 16), model_tokenizer(model), Path(tempfile.mkdtemp()),
                            "sample")
    texts = chunks.texts(picked)[:sample]
    encode(model, texts[:32], 32)  # warm up
    began = time.perf_counter()
    encode(model, texts, 32)
    rate = len(texts) / (time.perf_counter() - began)
    total = len(documents) * chunks.chunks_per_doc
    return (f"all-MiniLM-L6-v2 (torch, CPU): {rate:.1f} chunks/s on {len(texts)} sampled chunks; the collection's "
            f"~{total:,.0f} chunks would take ~{total / rate / 3600:.1f} h (load {load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sample", type=int, default=256, help="chunks timed with the transformer")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/searchgrade-bench-chunked"))
    args = parser.parse_args()
    print(f"machine before: {machine('model2vec', 'semantic-text-splitter', 'faiss-cpu')}", flush=True)
    args.workdir.mkdir(parents=True, exist_ok=True)
    collection = args.workdir / f"padded-{args.docs}"
    write_collection(collection, args.docs)
    static = args.workdir / "minilm-static"
    if not static.exists():
        searchgrade("embeddings", "distill", "all-MiniLM-L6-v2", "--out", str(static), "--dims", "256")
    strategies = args.workdir / "strategies.toml"
    strategies.write_text(f'[strategy.static-chunks]\nkind = "ann"\nembedding_model = "{static}"\nchunking = {CHUNKING}\n'
                          f'aggregate = "max"\n\n[strategy.static-chunks-exact]\nkind = "ann"\nembedding_model = '
                          f'"{static}"\nchunking = {CHUNKING}\naggregate = "max"\nann_index = "flat"\n\n'
                          f'[strategy.static]\nkind = "ann"\nembedding_model = "{static}"\n', encoding="utf-8")
    data = Path(tempfile.mkdtemp(prefix="sg-chunked-"))
    try:
        for round_ in range(1, args.rounds + 1):
            if round_ > 1:  # the same run again, every vector and index on disk
                print(f"round {round_}: the indexes kept from round 1", flush=True)
            print(f"round {round_}: {args.docs:,} documents, load before {load()}", flush=True)
            r = timed("evaluate", str(collection), "--qrels", "--strategies-file", str(strategies), "--strategies",
                      STRATEGIES, "--data-dir", str(data))
            run_id = r["stdout"].strip().splitlines()[-1]
            print(f"  evaluate  wall {r['wall_s']:7.1f} s  CPU {r['cpu_s']:7.1f} s  peak RSS {r['peak_rss_mb']:,.0f} MB; "
                  f"load after {load()}", flush=True)
            shown = json.loads(searchgrade("show", run_id, "--format", "json", "--data-dir", str(data)))
            ndcg = {m["strategy"]: round(m["value"], 4) for m in shown["metrics"] if m["metric"] == "ndcg" and m["k"] == 10}
            stats = shown["run"]["stats"]
            print(f"  documents {stats['documents']:,}, queries {stats['queries']}; nDCG@10 {json.dumps(ndcg)}", flush=True)
            for cost in shown["costs"]:
                print(f"  {json.dumps(cost)}", flush=True)
        print(projected_transformer(collection, args.sample), flush=True)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(f"machine after: {machine()}", flush=True)


if __name__ == "__main__":
    main()
