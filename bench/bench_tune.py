"""Issue 25's bench: fusion-only tuning trials on SciFact with reused lists vs recomputed ones, the
memory over many trials, and the must-show tuning of fusion and BM25 with its held-out comparison.

1. `searchgrade evaluate demo --qrels` (SciFact, 300 queries, ANN + BM25 + hybrid) into a data dir.
2. Trials per second: the hybrid's target (engine/tuning/setup.py) with reuse (the ANN and BM25
   lists computed once, every trial a fusion) and without (each trial searches both again), the
   same seeded TPE trials over all 300 queries, side by side in one process: the median seconds
   per trial of each, trials per second and the ratio. The reused target's first trial, which
   computes the lists, is reported apart.
3. Memory: the reused target over ``--memory-trials`` trials; the process's resident memory after
   trial 1, 10%, 50% and 100% of them (from /proc/self/statm).
4. The must-show: `searchgrade tune RUN` of the hybrid with fusion and BM25 in one space, seeded,
   on 70% of the queries (stratified), the held-out comparison against the default hybrid (RRF,
   k1 1.5, b 0.75) printed as the CLI prints it, and the held-out grade reads during tuning.

Prints Markdown for bench/RESULTS.md with the machine and its load.

    .venv/bin/python bench/bench_tune.py
    .venv/bin/python bench/bench_tune.py --trials 30 --recompute-trials 5 --memory-trials 100   # quicker
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import load, machine  # noqa: E402
from searchgrade.cli import main  # noqa: E402
from searchgrade.engine.metrics import parse_metric  # noqa: E402
from searchgrade.engine.store import Store  # noqa: E402
from searchgrade.engine.tuning.setup import prepare_tuning  # noqa: E402
from searchgrade.engine.tuning.tuner import optimise  # noqa: E402

SPACE = """strategy = "hybrid"
[params]
method = ["rrf", "wrrf", "combsum", "combmnz", "convex"]
norm = ["minmax", "zscore", "sum"]
weight = [0.0, 1.0]
fusion_depth = [10, 100]
rrf_k = [1, 100]
bm25_k1 = [0.5, 2.0]
bm25_b = [0.3, 1.0]
"""


def _cli(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    if code != 0:
        raise SystemExit(f"searchgrade {' '.join(args)} exited {code}: {err.getvalue().strip()[-500:]}")
    return out.getvalue(), err.getvalue()


def rss_mb() -> float:
    import os

    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed_trials(store: Store, run_id: str, data: Path, reuse: bool, trials: int, seed: int):
    tuning = prepare_tuning(store, run_id, data, strategy="hybrid", reuse=reuse)
    ids = tuning.query_ids
    per_trial = []

    def keep(record: Any) -> None:
        per_trial.append(record.seconds)

    optimise(tuning.target, tuning.grades, ids, tuning.space, parse_metric("ndcg@10"), 10, tuning.threshold,
             fold=0, trials=trials, time_budget_s=None, seed=seed, on_trial=keep)
    return per_trial, len(ids)


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50, help="trials of the must-show tuning (default 50)")
    parser.add_argument("--reuse-trials", type=int, default=100, help="timed trials with reused lists")
    parser.add_argument("--recompute-trials", type=int, default=10, help="timed trials recomputing the lists")
    parser.add_argument("--memory-trials", type=int, default=500)
    parser.add_argument("--data-dir", help="reuse a data dir (default: a temporary one)")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"machine: {machine('optuna', 'faiss-cpu')}")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(args.data_dir or tmp)
        t0 = time.perf_counter()
        out, _ = _cli("evaluate", "demo", "--qrels", "--strategies", "ann,fulltext,hybrid", "--data-dir", str(data))
        run_id = out.strip().splitlines()[-1]
        print(f"evaluate demo --qrels: run {run_id}, {time.perf_counter() - t0:.1f} s (load {load()})")
        store = Store(data)

        reused, n = timed_trials(store, run_id, data, True, args.reuse_trials + 1, seed=0)
        first, reused = reused[0], reused[1:]
        recomputed, _ = timed_trials(store, run_id, data, False, args.recompute_trials, seed=0)
        a, b = statistics.median(reused), statistics.median(recomputed)
        print(f"\n## Fusion-only trials on SciFact ({n} queries), {started}, load {load()}\n")
        print("| lists | trials timed | median s / trial | trials / s |")
        print("| --- | --- | --- | --- |")
        print(f"| reused (computed once: first trial {first:.2f} s) | {len(reused)} | {a:.4f} | {1 / a:.1f} |")
        print(f"| recomputed every trial | {len(recomputed)} | {b:.4f} | {1 / b:.2f} |")
        print(f"\nratio: reused trials are {b / a:.0f}x faster (median recomputed / median reused)")

        tuning = prepare_tuning(store, run_id, data, strategy="hybrid", reuse=True)
        marks = sorted({1, max(1, args.memory_trials // 10), max(1, args.memory_trials // 2), args.memory_trials})
        memory: dict[int, float] = {}

        def watch(record: Any) -> None:
            if record.number + 1 in marks:
                memory[record.number + 1] = rss_mb()

        optimise(tuning.target, tuning.grades, tuning.query_ids, tuning.space, parse_metric("ndcg@10"), 10,
                 tuning.threshold, fold=0, trials=args.memory_trials, time_budget_s=None, seed=1, on_trial=watch)
        print(f"\nresident memory over {args.memory_trials} fusion trials (load {load()}): "
              + ", ".join(f"after trial {t}: {memory[t]:.0f} MB" for t in marks))

        space = data / "space.toml"
        space.write_text(SPACE, encoding="utf-8")
        t0 = time.perf_counter()
        out, _ = _cli("tune", run_id, "--space", str(space), "--trials", str(args.trials), "--format", "json",
                        "--data-dir", str(data))
        report = json.loads(out)
        h = report["heldout"]
        print(f"\n## Must-show: hybrid fusion and BM25 tuned on SciFact, {args.trials} trials, "
              f"{time.perf_counter() - t0:.0f} s (load {load()})\n")
        print(f"split: {len(report['split']['tuning'])} tuning queries, {len(report['split']['heldout'])} held out "
              f"(seed {report['seed']}, stratified by query type)")
        print(f"start: {json.dumps(report['start'])}")
        print(f"tuned: {json.dumps(report['best'])}")
        for key in ("start", "tuned"):
            f = h[key]
            lat = h["latency"][key]
            print(f"- held-out {h['metric']} {key}: {f['value']:.4f} (95% CI {f['ci_low']:.4f} to {f['ci_high']:.4f}), "
                  f"judged@10 {h['judged'][key]:.2f}, p50 {lat['p50_ms']:.1f} ms, p95 {lat['p95_ms']:.1f} ms")
        d = h["difference"]
        print(f"- tuned - start: {d['value']:+.4f} (95% CI {d['ci_low']:+.4f} to {d['ci_high']:+.4f}), p = {d['p']:.4f}")
        print(f"- verdict: {h['verdict']}")
        print(f"- recommendation: {report['recommendation']}; held-out grades read during tuning: "
              f"{report['heldout_grade_reads']}")
    print(f"\nmachine after: {machine()}")


if __name__ == "__main__":
    main_bench()
