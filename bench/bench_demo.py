"""The demo run, this tree against a baseline commit, side by side: is anything slower for the small demo?

Each round runs `searchgrade evaluate demo --qrels` twice per side, in a new data directory: cold
(every index built, the demo's shipped vectors imported) and then warm (the same command again,
every index reused), as a user does on first and later runs. The two sides take turns, the first
side alternating from round to round, so machine noise hits both alike. The baseline is a
`git archive` of --baseline-ref unpacked into a temporary folder (removed afterwards); both sides
use this venv and the demo files of their own tree.

    .venv/bin/python bench/bench_demo.py --baseline-ref 090b02f --rounds 3
    .venv/bin/python bench/bench_demo.py --baseline-ref 090b02f --strategies fulltext,ann,hybrid

Prints every run's wall time, then per side and phase the median, and the ratio this/baseline
(< 1: this tree is faster), with the machine and its load average before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import load, machine  # noqa: E402


def unpack(ref: str, into: Path) -> Path:
    """The tree of ``ref`` (a commit of this repository) as plain files under ``into``."""
    archive = into / "baseline.tar"
    with open(archive, "wb") as out:
        done = subprocess.run(["git", "-C", str(ROOT), "archive", ref], stdout=out, stderr=subprocess.PIPE,
                              check=False)
    if done.returncode != 0:
        raise SystemExit(f"cannot archive {ref!r}: {done.stderr.decode().strip()}")
    tree = into / "baseline"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    archive.unlink()
    return tree


def run(tree: Path, data_dir: Path, strategies: str, max_queries: int | None) -> float:
    argv = [sys.executable, "-m", "searchgrade.cli", "evaluate", "demo", "--qrels", "--strategies", strategies,
            "--data-dir", str(data_dir)]
    if max_queries:
        argv += ["--max-queries", str(max_queries)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{tree}: evaluate failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", required=True, help="the commit to compare with (e.g. main before a change)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--strategies", default="fulltext",
                        help="strategies to run (default: full-text, the strategy issue 9 changed; "
                             "fulltext,ann,hybrid is everything the demo runs without a cross-encoder)")
    parser.add_argument("--max-queries", type=int, help="fewer queries (quick check; default all 300)")
    args = parser.parse_args()

    print(f"machine before: {machine()}")
    work = Path(tempfile.mkdtemp(prefix="bench-demo-"))
    try:
        sides = {"baseline": unpack(args.baseline_ref, work), "this": ROOT}
        times: dict[tuple[str, str], list[float]] = {}
        for round_no in range(args.rounds):
            order = list(sides) if round_no % 2 == 0 else list(reversed(sides))
            for side in order:
                data_dir = work / f"data-{side}-{round_no}"
                cold = run(sides[side], data_dir, args.strategies, args.max_queries)
                warm = run(sides[side], data_dir, args.strategies, args.max_queries)
                shutil.rmtree(data_dir)
                times.setdefault((side, "cold"), []).append(cold)
                times.setdefault((side, "warm"), []).append(warm)
                print(f"round {round_no + 1} {side:8s}: cold {cold:6.1f} s, warm {warm:6.1f} s "
                      f"(load {load()})", flush=True)
        print(f"strategies {args.strategies}, {args.max_queries or 'all'} queries, {args.rounds} rounds, "
              f"baseline {args.baseline_ref}")
        for phase in ("cold", "warm"):
            base = statistics.median(times[("baseline", phase)])
            this = statistics.median(times[("this", phase)])
            print(f"  {phase}: median baseline {base:.1f} s, this {this:.1f} s, ratio this/baseline {this / base:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"machine after: {machine()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
