"""Time the demo's "train a reranker on these grades" path end to end, with the CLI a user runs.

The steps, each a separate `searchgrade` process with default settings (what the Results page's
button does is step 2; what it then shows is that reranker's card, the held-out figures):

    1. searchgrade evaluate demo --qrels                      (the run to learn from: setup, timed apart)
    2. searchgrade train-reranker RUN --name demo-reranker     (defaults: 5 folds, held-out figures)
    3. searchgrade evaluate demo --qrels --reranker-model trained:demo-reranker
    4. searchgrade show RUN2                                   (the reranked strategies' figures)

Prints per step the wall-clock seconds, the CPU seconds of the process (user + system, all threads),
and the load average before and after; then the demo path (steps 2-4) in total. The machine is
whatever runs this: on a shared machine the wall-clock is worse than on an idle one, the CPU time
much less so, which is why both are printed.

    .venv/bin/python bench/time_demo_reranker.py                      # a temporary data dir
    .venv/bin/python bench/time_demo_reranker.py --data-dir /tmp/d --run RUN_ID   # skip step 1
    nice -n 10 .venv/bin/python bench/time_demo_reranker.py --threads 1
"""

from __future__ import annotations

import argparse
import os
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


def _step(label: str, argv: list[str], env: dict[str, str], rows: list[tuple]) -> str:
    """Run one searchgrade command; returns its last stdout line (the run id or trained:NAME)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = load()
    print(f"{time.strftime('%H:%M:%S')} {label}: searchgrade {' '.join(argv)} (load {load_before})",
          file=sys.stderr, flush=True)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "searchgrade.cli", *argv], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{label} failed with exit {proc.returncode}")
    rows.append((label, wall, cpu, load_before, load()))
    lines = proc.stdout.strip().splitlines()
    if "show" in label:
        print(proc.stdout, flush=True)
    return lines[-1] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, help="default: a temporary folder, removed at the end")
    parser.add_argument("--run", help="an existing complete `evaluate demo --qrels` run in --data-dir "
                        "(skips step 1)")
    parser.add_argument("--name", default="demo-reranker")
    parser.add_argument("--collection", default="demo", help="a BEIR folder with qrels (default: the "
                        "demo, SciFact)")
    parser.add_argument("--threads", type=int, help="passed to train-reranker (default: torch's)")
    args = parser.parse_args()
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="time-demo-reranker-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    common = ["--data-dir", str(data)]
    rows: list[tuple] = []
    print(f"machine: {machine('torch')}", flush=True)
    try:
        run = args.run or _step("1 evaluate (setup)", ["evaluate", args.collection, "--qrels", *common],
                                env, rows)
        extra = ["--threads", str(args.threads)] if args.threads else []
        trained = _step("2 train-reranker", ["train-reranker", run, "--name", args.name, "--replace",
                                             *common, *extra], env, rows)
        run2 = _step("3 evaluate trained", ["evaluate", args.collection, "--qrels", "--reranker-model", trained,
                                            *common], env, rows)
        _step("4 show", ["show", run2, *common], env, rows)
    finally:
        if args.data_dir is None:
            shutil.rmtree(data, ignore_errors=True)
    print(f"{'step':<22} {'wall s':>8} {'CPU s':>8}  load before -> after")
    for label, wall, cpu, lb, la in rows:
        print(f"{label:<22} {wall:>8.0f} {cpu:>8.0f}  {lb} -> {la}")
    path = [r for r in rows if r[0][0] in "234"]
    wall, cpu = sum(r[1] for r in path), sum(r[2] for r in path)
    target = (f"; the demo's 15 min target: {'met' if wall < 900 else 'NOT met'} here"
              if args.collection == "demo" else "")
    print(f"{'demo path (2-4)':<22} {wall:>8.0f} {cpu:>8.0f}  ({wall / 60:.1f} min wall, "
          f"{cpu / 60:.1f} CPU min{target})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
