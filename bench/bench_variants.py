"""The SciFact run of three variants of the dense strategy, side by side in one run, with their cost.

In one `searchgrade evaluate --qrels` on SciFact (5,183 abstracts, 300 judged test queries):

- ``ann``: the built-in, all-MiniLM-L6-v2 over whole abstracts;
- ``minilm-chunks``: the same model over chunks of about 128 tokens (16 overlap), max aggregation;
- ``minilm-static``: a model2vec static model distilled from it here (`searchgrade embeddings
  distill`, its time printed), over whole abstracts.

The collection is the demo's corpus, queries and qrels copied without the vectors the demo ships,
so the transformer embeds every abstract in this run and its documents per second are measured
beside the static model's. Printed: nDCG@10 per strategy from the store and from ir_measures on the
exported document-level TREC run (they must be equal), every cost figure of `show --format json`,
and the ratio of documents embedded per second (static model / transformer), with the machine and
its load before and after.

    .venv/bin/python bench/bench_variants.py
    .venv/bin/python bench/bench_variants.py --workdir /tmp/sg-variants     # keeps the distilled model
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import load, machine  # noqa: E402

SCIFACT = ROOT / "demo" / "scifact"
STRATEGIES = "ann,minilm-chunks,minilm-static"


def searchgrade(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "searchgrade.cli", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"searchgrade {' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()[-1500:]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/searchgrade-bench-variants"))
    parser.add_argument("--dims", type=int, default=256)
    args = parser.parse_args()
    print(f"machine before: {machine('model2vec', 'semantic-text-splitter', 'sentence-transformers')}", flush=True)
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    collection = work / "scifact"
    if not collection.exists():
        collection.mkdir()
        for name in ("corpus.jsonl", "queries.jsonl", "qrels.tsv"):  # not embeddings/: embedded here
            shutil.copy(SCIFACT / name, collection / name)
    static = work / "minilm-static"
    if not static.exists():
        began = time.perf_counter()
        print(searchgrade("embeddings", "distill", "all-MiniLM-L6-v2", "--out", str(static), "--dims",
                          str(args.dims)).strip(), flush=True)
        print(f"distilled in {time.perf_counter() - began:.1f} s wall (the command's process included); "
              f"load {load()}", flush=True)
    strategies = work / "variants.toml"
    strategies.write_text(f'''
[strategy.minilm-chunks]
kind = "ann"
embedding_model = "all-MiniLM-L6-v2"
chunking = {{ method = "tokens", size = 128, overlap = 16 }}
aggregate = "max"

[strategy.minilm-static]
kind = "ann"
embedding_model = "{static}"
''', encoding="utf-8")
    data = work / "data"
    shutil.rmtree(data, ignore_errors=True)
    print(f"evaluate: {STRATEGIES} on SciFact; load {load()}", flush=True)
    began = time.perf_counter()
    run_id = searchgrade("evaluate", str(collection), "--qrels", "--strategies-file", str(strategies),
                         "--strategies", STRATEGIES, "--data-dir", str(data)).strip().splitlines()[-1]
    print(f"evaluate: {time.perf_counter() - began:.0f} s wall, run {run_id}; load {load()}", flush=True)
    shown = json.loads(searchgrade("show", run_id, "--format", "json", "--data-dir", str(data)))
    stored = {m["strategy"]: m["value"] for m in shown["metrics"] if m["metric"] == "ndcg" and m["k"] == 10}
    out = work / "trec"
    shutil.rmtree(out, ignore_errors=True)
    searchgrade("export", run_id, "--format", "trec", "--out", str(out), "--data-dir", str(data))
    import ir_measures

    qrels = [ir_measures.Qrel(q, d, int(g)) for q, d, g in (line.split("\t") for line in
                                                            (collection / "qrels.tsv").read_text().splitlines()[1:])]
    for strategy in STRATEGIES.split(","):
        run = list(ir_measures.read_trec_run(str(out / f"{strategy}.trec")))
        reference = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], qrels, run)[ir_measures.nDCG @ 10]
        print(f"  {strategy:<15} nDCG@10 {stored[strategy]:.4f} (ir_measures on the exported run: {reference:.4f})",
              flush=True)
    print("costs (show --format json):", flush=True)
    costs = {c["strategy"]: c for c in shown["costs"]}
    for strategy in STRATEGIES.split(","):
        print(f"  {json.dumps(costs[strategy])}", flush=True)
    transformer, static_rate = costs["ann"]["items_per_s"], costs["minilm-static"]["items_per_s"]
    if transformer and static_rate:
        print(f"documents per second, static / transformer: {static_rate:,.0f} / {transformer:,.1f} = "
              f"{static_rate / transformer:,.0f}x", flush=True)
    print(f"machine after: {machine()}", flush=True)


if __name__ == "__main__":
    main()
