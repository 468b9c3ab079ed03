"""What "Can I trust the judge?" costs to compute: the judges' report of a panel run, with and
without the decision agreement's nested bootstrap interval (the rest of the report the same).

A simulated qrels run (tests/engine/judges/fixtures.py: strategies of known skill, every retrieved
pair graded by each simulated judge and the panel) is written into a fresh store; the report is
then computed ``--repeats`` times, in turn: with ``outer_resamples`` 0 (no interval of the
agreement), with the default (200) computed afresh (the kept resamples cleared first, as on a
run's first view), and with them kept (every later view); in one process, medians and ratios.

    .venv/bin/python bench/bench_judges.py [--queries 300] [--judges faithful,lenient,flip] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import load, machine
from searchgrade.engine.judges.report import judge_report
from searchgrade.engine.statistics.decisions import OUTER_RESAMPLES
from searchgrade.engine.store import Store
from tests.engine.judges.fixtures import write_simulated_run
from tests.engine.judges.simulated import SKILLS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--judges", default="faithful,lenient,flip")
    parser.add_argument("--strategies", type=int, default=6, help="strategies of the run (4 to 8)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(machine("numpy", "duckdb"))
    skills = dict(list(SKILLS.items()) + [(f"extra{i}", 0.2 + 0.1 * i) for i in range(4)])
    skills = dict(list(skills.items())[: args.strategies])
    judges = args.judges.split(",")
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "data")
        run_id, _ = write_simulated_run(store, Path(folder) / "sim", judges, n_queries=args.queries, skills=skills)
        times: dict[str, list[float]] = {"none": [], "computed": [], "kept": []}
        for _ in range(args.repeats):
            for how, outer in (("none", 0), ("computed", OUTER_RESAMPLES), ("kept", OUTER_RESAMPLES)):
                if how == "computed":  # forget the kept resamples: computed afresh, as a first view does
                    with store.transaction() as con:
                        store.clear_run_contents(con, run_id, ["kept_reads"])
                started = time.perf_counter()
                judge_report(store, run_id, outer_resamples=outer)
                times[how].append(time.perf_counter() - started)
                print(f"{how:>8} (outer_resamples {outer:>3}): {times[how][-1]:.2f} s  (load {load()})")
    m = len(skills) * (len(skills) - 1) // 2
    print(f"{args.queries} queries, {len(skills)} strategies ({m} comparisons), {len(judges)} judges + the panel")
    median = {how: statistics.median(t) for how, t in times.items()}
    print(f"median: no interval {median['none']:.2f} s; with the agreement's interval ({OUTER_RESAMPLES} outer "
          f"resamples) computed {median['computed']:.2f} s (x{median['computed'] / median['none']:.1f}), kept "
          f"{median['kept']:.2f} s (x{median['kept'] / median['none']:.1f})")
    print(machine("numpy", "duckdb"))


if __name__ == "__main__":
    main()
