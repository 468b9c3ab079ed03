"""The demo run, this tree against a baseline commit, side by side: is anything slower for the small demo?

Each round runs `searchgrade evaluate demo --qrels` twice per side, in a new data directory: cold
(every index built, the demo's shipped vectors imported) and then warm (the same command again,
every index reused), as a user does on first and later runs. The two sides take turns, the first
side alternating from round to round, so machine noise hits both alike. The baseline is checked
out of git (bench/baseline.py: `git archive` of --baseline into a temporary folder, removed
afterwards) and each side runs in its own process with only its own code importable: an old tree
(`engine`, `core`, `indexes` at the top level) and this one (the package `searchgrade`) alike.
Both sides use this venv and the demo files of their own tree.

    .venv/bin/python bench/bench_demo.py --baseline 090b02f --rounds 3
    .venv/bin/python bench/bench_demo.py --baseline main --strategies fulltext,ann,hybrid --rounds 2
    .venv/bin/python bench/bench_demo.py --baseline main --max-queries 5 --rounds 1   # a quick check

Prints every run's wall time, then per side and phase the median, and the ratio this/baseline
(< 1: this tree is faster), with the machine and its load average before and after; then each
side's per-strategy metrics of the last cold run (`searchgrade show --format json`), and whether
they are the same.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.baseline import Tree, checkout, commit_of_this_tree, this_tree  # noqa: E402
from bench.machine import load, machine  # noqa: E402


def searchgrade(tree: Tree, *args: str) -> subprocess.CompletedProcess:
    """One `searchgrade` command of ``tree``, in its own process; SystemExit if it fails."""
    done = subprocess.run([*tree.cli(), *args], cwd=tree.root, env=tree.env(), capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree.label}: searchgrade {args[0]} failed (exit {done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    return done


def run(tree: Tree, data_dir: Path, strategies: str, max_queries: int | None) -> tuple[float, str]:
    """Wall seconds of one `evaluate demo --qrels`, and its run id (the last line of its output)."""
    argv = ["evaluate", "demo", "--qrels", "--strategies", strategies, "--data-dir", str(data_dir)]
    if max_queries:
        argv += ["--max-queries", str(max_queries)]
    start = time.perf_counter()
    done = searchgrade(tree, *argv)
    return time.perf_counter() - start, done.stdout.strip().splitlines()[-1]


def metrics(tree: Tree, data_dir: Path, run_id: str) -> dict[tuple[str, str, int], float]:
    """(strategy, metric, k) -> value of a stored run, as `searchgrade show --format json` gives them."""
    shown = json.loads(searchgrade(tree, "show", run_id, "--format", "json", "--data-dir", str(data_dir)).stdout)
    return {(m["strategy"], m["metric"], m["k"]): m["value"] for m in shown["metrics"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", "--baseline-ref", dest="baseline", required=True, metavar="COMMIT",
                        help="the commit to compare with (a hash or a branch, e.g. main before a change)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--strategies", default="fulltext",
                        help="strategies to run (default: full-text, the strategy issue 9 changed; "
                             "fulltext,ann,hybrid is everything the demo runs without a cross-encoder)")
    parser.add_argument("--max-queries", type=int, help="fewer queries (quick check; default all 300)")
    args = parser.parse_args()

    print(f"machine before: {machine()}")
    print(f"this tree: {commit_of_this_tree()}; baseline: {args.baseline}")
    work = Path(tempfile.mkdtemp(prefix="bench-demo-"))
    try:
        with checkout(args.baseline) as baseline, this_tree() as this:
            sides = {"baseline": baseline, "this": this}
            times: dict[tuple[str, str], list[float]] = {}
            figures: dict[str, dict[tuple[str, str, int], float]] = {}
            for round_no in range(args.rounds):
                order = list(sides) if round_no % 2 == 0 else list(reversed(sides))
                for side in order:
                    data_dir = work / f"data-{side}-{round_no}"
                    cold, run_id = run(sides[side], data_dir, args.strategies, args.max_queries)
                    figures[side] = metrics(sides[side], data_dir, run_id)
                    warm, _ = run(sides[side], data_dir, args.strategies, args.max_queries)
                    shutil.rmtree(data_dir)
                    times.setdefault((side, "cold"), []).append(cold)
                    times.setdefault((side, "warm"), []).append(warm)
                    print(f"round {round_no + 1} {side:8s}: cold {cold:6.1f} s, warm {warm:6.1f} s "
                          f"(load {load()})", flush=True)
        print(f"strategies {args.strategies}, {args.max_queries or 'all'} queries, {args.rounds} rounds, "
              f"baseline {baseline.label}")
        for phase in ("cold", "warm"):
            base = statistics.median(times[("baseline", phase)])
            this_s = statistics.median(times[("this", phase)])
            print(f"  {phase}: median baseline {base:.1f} s, this {this_s:.1f} s, ratio this/baseline {this_s / base:.2f}")
        print(same_metrics(figures["baseline"], figures["this"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"machine after: {machine()}")
    return 0


def same_metrics(old: dict[tuple[str, str, int], float], new: dict[tuple[str, str, int], float]) -> str:
    """One line: nDCG@10 per strategy on both sides, and whether every value both report is equal (to 1e-9)."""
    shared = sorted(old.keys() & new.keys())
    differ = [key for key in shared if abs(old[key] - new[key]) > 1e-9]
    ndcg = ", ".join(f"{s} {old[(s, m, k)]:.4f} / {new[(s, m, k)]:.4f}" for s, m, k in shared
                     if (m, k) == ("ndcg", 10))
    verdict = "yes" if shared and not differ else f"NO: {len(differ)} of {len(shared)} differ, e.g. {differ[:3]}"
    return (f"nDCG@10 baseline / this: {ndcg or 'not reported by both'}; {len(shared)} values both report, "
            f"the same: {verdict}")


if __name__ == "__main__":
    raise SystemExit(main())
