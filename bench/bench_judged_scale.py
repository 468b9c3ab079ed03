"""A judged collection of 100,000 documents evaluated end to end: full-text, ANN from cached vectors, hybrid.

The collection is SciFact (5,183 abstracts, 300 test queries with their human judgments) padded
with synthetic distractor documents up to --docs. Each distractor is 1 to 3 random sentences
(seeded) of the SciFact and Cranfield copies in the repository, never a sentence of a document
judged relevant to any query, so the padding adds no relevant document the qrels would miss. The
distractors are short on purpose: their vectors are real all-MiniLM-L6-v2 embeddings made on this
machine, which is feasible for short texts on 2 cores; abstracts-length padding would take hours.

Two phases, each printed with the machine and the load:

1. prepare (once, cached in --workdir, not part of the timed figure): write the collection, embed
   every document (the demo's shipped SciFact vectors are reused; the distractors are embedded
   here) and write the vectors as an NPZ file of document ids and vectors: what a user who embedded
   elsewhere brings.
2. timed (--rounds times, each in a new data directory): `searchgrade import-vectors` of that
   file, then `searchgrade evaluate COLLECTION --qrels --strategies fulltext,ann,hybrid`, each a
   child process, with wall-clock, CPU time and peak RSS; the evaluate builds the full-text and ANN
   indexes itself. nDCG@10 per strategy is read from `searchgrade show --format json`, beside the
   same evaluate on SciFact alone (5,183 documents) for scale.

    .venv/bin/python bench/bench_judged_scale.py                      # 100k, 1 round
    .venv/bin/python bench/bench_judged_scale.py --docs 20000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import load, machine  # noqa: E402

SCIFACT = ROOT / "demo" / "scifact"
CRANFIELD = ROOT / "tests" / "data" / "cranfield"
STRATEGIES = "fulltext,ann,hybrid"
MODEL = "all-MiniLM-L6-v2"


def distractor_sentences() -> list[str]:
    relevant = {line.split("\t")[1] for line in (SCIFACT / "qrels.tsv").read_text().splitlines()[1:]
                if line.strip()}
    pool = []
    for folder in (SCIFACT, CRANFIELD):
        for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            if folder == SCIFACT and doc["_id"] in relevant:
                continue
            pool.extend(s for s in re.split(r"(?<=[.!?])\s+", doc.get("text", "")) if len(s) > 20)
    return pool


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
            text = " ".join(rng.choice(pool) for _ in range(rng.randint(1, 3)))
            out.write(json.dumps({"_id": f"pad{i}", "title": "", "text": text}) + "\n")
    os.replace(tmp, folder / "corpus.jsonl")


def prepare(workdir: Path, n_docs: int) -> tuple[Path, Path]:
    """The collection folder and its vectors file, made once."""
    import numpy as np

    from searchgrade.engine.collections import load_collection
    from searchgrade.indexes.build import bundled_shard
    from searchgrade.indexes.embeddings.encoder import EmbeddingCache, encode_cached

    folder = workdir / f"judged-{n_docs}"
    vectors_file = workdir / f"judged-{n_docs}-vectors.npz"
    write_collection(folder, n_docs)
    if vectors_file.exists():
        return folder, vectors_file
    collection = load_collection(folder)
    cache_dir = workdir / "embedding-cache"
    cache = EmbeddingCache(cache_dir)
    shard = bundled_shard(load_collection(SCIFACT), MODEL)
    if shard is not None:
        cache.import_shard(shard)
    began, cpu0 = time.perf_counter(), cpu_s(children=False)
    print(f"prepare: embedding {len(collection.documents):,} documents ({machine()})", flush=True)
    last = [0.0]

    def progress(_stage: str, done: int, total: int) -> None:
        if time.perf_counter() - last[0] > 60:
            last[0] = time.perf_counter()
            print(f"  {done:,} / {total:,}  ({time.perf_counter() - began:.0f} s, load {load()})", flush=True)

    vectors, stats = encode_cached(MODEL, [d.content for d in collection.documents], cache_dir,
                                   progress=progress)
    print(f"prepare: embedded {stats.embedded:,} new texts in {stats.encode_s:.0f} s of encoding "
          f"({stats.docs_per_s or 0:.1f} docs/s), {cpu_s(children=False) - cpu0:.0f} CPU s, "
          f"{stats.cache_hits:,} from the demo's shipped vectors; load {load()}", flush=True)
    ids = np.array([d.doc_id for d in collection.documents])
    tmp = vectors_file.with_suffix(".tmp.npz")
    np.savez(tmp, ids=ids, vectors=vectors, model=np.array(MODEL))
    os.replace(tmp, vectors_file)
    return folder, vectors_file


def cpu_s(children: bool = True) -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str]) -> dict:
    """Run one searchgrade command as a child: wall, CPU and peak RSS (GNU time)."""
    report = Path(tempfile.mkstemp(prefix="sg-time-")[1])
    command = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", str(report),
               sys.executable, "-m", "searchgrade.cli", *args]
    began = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    elapsed, user, system, rss_kb = report.read_text().split()[-4:]
    report.unlink()
    return {"wall_s": wall, "cpu_s": float(user) + float(system), "peak_rss_mb": int(rss_kb) / 1024,
            "stdout": done.stdout}


def ndcg(data_dir: Path) -> dict[str, float]:
    """nDCG@10 per strategy of the one run in data_dir."""
    from searchgrade.engine.store import Store

    store = Store(data_dir)
    (run,) = store.list_runs()
    return {row["strategy"]: round(row["value"], 4) for row in store.metric_summary(run.run_id, 10)
            if row["metric"] == "ndcg"}


def evaluate(folder: Path, vectors: Path | None) -> dict:
    data_dir = Path(tempfile.mkdtemp(prefix="sg-judged-"))
    try:
        out = {}
        if vectors is not None:
            out["import"] = timed(["import-vectors", str(folder), str(vectors), "--data-dir", str(data_dir),
                                   "--embedding-model", MODEL])
        out["evaluate"] = timed(["evaluate", str(folder), "--qrels", "--strategies", STRATEGIES,
                                 "--data-dir", str(data_dir)])
        out["ndcg"] = ndcg(data_dir)
        return out
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/searchgrade-bench-judged"))
    parser.add_argument("--no-scifact", action="store_true", help="skip the SciFact-alone evaluate")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine before: {machine()}", flush=True)
    folder, vectors = prepare(args.workdir, args.docs)
    for round_ in range(1, args.rounds + 1):
        print(f"round {round_}: {args.docs:,} documents, load before {load()}", flush=True)
        result = evaluate(folder, vectors)
        for step in ("import", "evaluate"):
            r = result[step]
            print(f"  {step:<9} wall {r['wall_s']:7.1f} s  CPU {r['cpu_s']:7.1f} s  peak RSS "
                  f"{r['peak_rss_mb']:,.0f} MB", flush=True)
        total = result["import"]["wall_s"] + result["evaluate"]["wall_s"]
        print(f"  end to end (import + evaluate): {total:.1f} s wall; load after {load()}", flush=True)
        print(f"  nDCG@10: {json.dumps(result['ndcg'])}", flush=True)
    if not args.no_scifact:
        alone = evaluate(SCIFACT, None)
        print(f"SciFact alone (5,183 documents, shipped vectors): evaluate wall {alone['evaluate']['wall_s']:.1f} s, "
              f"nDCG@10: {json.dumps(alone['ndcg'])}", flush=True)
    print(f"machine after: {machine()}", flush=True)


if __name__ == "__main__":
    main()
