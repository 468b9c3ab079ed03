"""The demonstration of issue 28: judgments made for something else, the warning, and pooled judging.

On the bundled SciFact demo, with real search (ANN, BM25, hybrid), the steps a team goes through
when it grades its search with judgments that were made by pooling another system:

1. The truth: the demo with its own qrels (SciFact's; binary, relevant documents only).
2. Judgments made for something else: only BM25's top 10 judged (each pair as the truth grades it,
   0 where SciFact has no judgment), as a test collection pooled from BM25 alone would be. ANN and
   hybrid then retrieve many documents nobody judged.
3. That run's `searchgrade show`: judged@10 per strategy, the warning, the condensed NDCG and the
   RBP residual.
4. `searchgrade judge-pool RUN --pool-depth 10`: the pool's holes judged once each, through the
   project's local fake OpenAI server answering as an assessor who knows the truth (grade 3 for a
   SciFact-relevant document, 0 otherwise). The number of judge calls is the number of unjudged
   pairs in the pool.

Prints each step's figures as Markdown for bench/RESULTS.md, with the machine and its load.

    .venv/bin/python bench/bench_holes.py                    # all 300 queries
    .venv/bin/python bench/bench_holes.py --max-queries 50   # a quicker look
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import load, machine  # noqa: E402
from searchgrade.cli import main  # noqa: E402
from searchgrade.engine.collections import load_collection  # noqa: E402
from searchgrade.engine.paths import DEMO_DIR  # noqa: E402
from searchgrade.engine.run.judge_pool import pool_holes  # noqa: E402
from searchgrade.engine.run.pool import PoolDepth  # noqa: E402
from searchgrade.engine.statistics.paired import paired_differences  # noqa: E402
from searchgrade.engine.store import Store  # noqa: E402
from searchgrade.viewmodels.holes import holes_panel  # noqa: E402
from tests.engine.holes_fixtures import Oracle  # noqa: E402
from tests.engine.llm.fake_server import FakeOpenAIServer  # noqa: E402

STRATEGIES = "ann,fulltext,hybrid"
K = 10


def _cli(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    if code != 0:
        raise SystemExit(f"searchgrade {' '.join(args)} exited {code}: {err.getvalue().strip()[-500:]}")
    return out.getvalue(), err.getvalue()


def _figures(store: Store, run_id: str) -> dict[tuple[str, str], float]:
    return {(r["strategy"], r["metric"]): r["value"] for r in store.metric_summary(run_id, K)}


def _row(name: str, f: dict, strategy: str) -> str:
    cells = [f.get((strategy, m)) for m in ("ndcg", "judged", "ndcg_judged", "bpref", "rbp", "rbp_residual")]
    return f"| {name} | {strategy} | " + " | ".join("-" if c is None else f"{c:.3f}" for c in cells) + " |"


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-queries", type=int, default=None, help="a seeded sample (default: all 300)")
    parser.add_argument("--data-dir", help="where the runs go (default: a temporary folder)")
    args = parser.parse_args()
    data = Path(args.data_dir or tempfile.mkdtemp(prefix="bench_holes_"))
    sample = ["--max-queries", str(args.max_queries)] if args.max_queries else []
    print(f"machine: {machine()}; load before: {load()}")
    started = time.perf_counter()

    truth_out, _ = _cli("evaluate", "demo", "--qrels", "--strategies", STRATEGIES, "--k", str(K), *sample,
                        "--name", "truth: SciFact's qrels", "--data-dir", str(data))
    truth_run = truth_out.strip().splitlines()[-1]
    store = Store(data)
    collection = load_collection(DEMO_DIR)
    truth = collection.qrels or {}
    bm25_top = store.top_lists(truth_run, K)["fulltext"]
    partial = data / "qrels_bm25_pool.tsv"
    partial.write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{truth.get(q, {}).get(d, 0)}\n" for q, docs in sorted(bm25_top.items()) for d in docs))
    holey_out, _ = _cli("evaluate", "demo", "--qrels", "--qrels-file", str(partial), "--strategies", STRATEGIES,
                        "--k", str(K), *sample, "--name", "qrels pooled from BM25 only", "--data-dir", str(data))
    holey_run = holey_out.strip().splitlines()[-1]
    show, _ = _cli("show", holey_run, "--data-dir", str(data))
    found = pool_holes(store, store.get_run(holey_run), PoolDepth(K))

    oracle = Oracle(collection.queries, collection.documents, truth, to_judge=lambda grade: 3 if grade > 0 else 0)
    with FakeOpenAIServer(oracle) as server:
        pooled_out, pooled_err = _cli("judge-pool", holey_run, "--pool-depth", str(K), "--model", "oracle",
                                      "--base-url", server.base_url, "--data-dir", str(data))
        posts = server.posts
    pooled_run = pooled_out.strip().splitlines()[-1]
    elapsed = time.perf_counter() - started

    runs = {"truth (SciFact qrels)": truth_run, "BM25-pooled qrels": holey_run, "after judge-pool": pooled_run}
    figures = {name: _figures(store, run_id) for name, run_id in runs.items()}
    print(f"\nqueries: {len(store.queries(holey_run))}; pool (top {K} of {STRATEGIES}): {found.pairs} pairs, "
          f"{len(found.holes)} unjudged; judge calls: {posts} (the server's count), "
          f"stats: {json.dumps(store.get_run(pooled_run).stats['pool'])}")
    print(f"\n| run | strategy | NDCG@{K} | judged@{K} | NDCG, judged only@{K} | bpref@{K} | RBP@{K} | RBP residual@{K} |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, f in figures.items():
        for strategy in STRATEGIES.split(","):
            print(_row(name, f, strategy))
    panel = holes_panel(store, holey_run, "ndcg", K)
    print(f"\nwarning on the BM25-pooled run: {panel.warning}")
    print("\n`searchgrade show` of the BM25-pooled run (its holes block):\n")
    print("```")
    print("\n".join(line for line in show.splitlines() if line.startswith(("holes", "ann", "fulltext", "hybrid",
                                                                             "warning", "strategy"))))
    print("```")
    for name, f in figures.items():
        order = sorted(STRATEGIES.split(","), key=lambda s: -f[(s, "ndcg")])
        print(f"- NDCG@{K} order, {name}: {' > '.join(order)}")
    print(f"\nANN against BM25 on NDCG@{K}, paired over the queries (engine/statistics/paired.py, the one "
          "procedure: paired bootstrap, one comparison per run):\n")
    for name, run_id in runs.items():
        frame = store.metric_frame(run_id, "ndcg", K).pivot(index="query_id", columns="strategy", values="value")
        [d] = paired_differences([(frame["ann"].to_numpy(), frame["fulltext"].to_numpy())])
        print(f"- {name}: ANN - BM25 = {d.diff:+.3f} [{d.ci_low:+.3f}, {d.ci_high:+.3f}], p = {d.p_value:.4f}, "
              f"{'significant' if d.significant else 'not distinguishable'}")
    print("\n" + next((line for line in pooled_err.splitlines() if line.startswith("judged the pool")), ""))
    print(f"\nwall time of the whole bench: {elapsed:.0f} s; load after: {load()}")


if __name__ == "__main__":
    main_bench()
