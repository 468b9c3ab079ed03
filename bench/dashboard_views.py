"""One side of bench/bench_dashboard.py: times the dashboard's view models of one tree, cold, in this process.

Started by bench_dashboard.py through bench/baseline.py, with only that tree's code importable (an
old tree's ``engine`` at the top level, or the package ``searchgrade``); not meant to be run by hand.
It reads the runs the parent wrote (a copy of the same database files for each side), times each
view as the parent asks, and writes its timings and figures to ``--out`` (a pickle of plain data: DataFrames
whose object columns are strings, so the parent needs none of this tree's classes).

The view models it calls exist under the same names in every tree since the dashboard's first
version (viewmodels/: results_view, query_detail, compare_runs, run_choices, trend_cutoffs, trend),
but for the failed-queries table: ``results.failed_queries`` until issue 34, then
``failures.failure_table``; ``Store.session`` (one open database per page) only where the tree has it.
"""

from __future__ import annotations

import argparse
import importlib
import pickle
import statistics
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from machine import load

#: Stored metrics whose paired tests no call has kept yet (dcg is the headline, kept at completion):
#: "results, other metric" opens one per repeat.
FIRST_VIEW_METRICS = ["ndcg", "precision", "recall", "mrr", "map", "mean_relevance", "judged"]
#: Cut-offs the runs do not store (they store 1, 3, 5 and 10): "results, k not stored" opens one per repeat.
NEW_CUTOFFS = [7, 9, 8, 6, 4, 2]


def timed(fn: Callable[[], object], repeats: int, slow_s: float,
          before: Callable[[], object] | None = None) -> tuple[float, int, float]:
    """Median wall time of `repeats` calls (stopping after one call slower than slow_s), their
    number, and the median CPU time of this process over each call (all its threads): on a
    machine shared with other work, the wall time grows with the load, the CPU time much less.
    ``before`` runs before each call, untimed."""
    times, cpu = [], []
    for _ in range(repeats):
        if before is not None:
            before()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        if times[-1] > slow_s:
            break
    return statistics.median(times), len(times), statistics.median(cpu)


PLAIN = (str, int, float, bool, type(None))


def plain(frame: Any) -> Any:
    """A copy of ``frame`` whose cells are plain values: anything else (an object of this tree's
    classes) as its string, so the parent can unpickle it without this tree's code."""
    frame = frame.reset_index(drop=True).copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(lambda v: v if isinstance(v, PLAIN) else str(v))
    return frame


def figures(view: Any) -> dict:
    """What the parent compares of a results view: the headline and the tables behind the figures."""
    return {"headline": (view.headline.strategy, float(view.headline.value)),
            **{name: plain(getattr(view, name)) for name in
               ("metric_summary", "by_position", "best_queries", "worst_queries", "reranker_table")}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", default="", help="the tree's import prefix ('searchgrade.' or '')")
    parser.add_argument("--side", required=True, help="the label printed beside each timing")
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, required=True)
    parser.add_argument("--slow-s", type=float, required=True)
    parser.add_argument("--runs-db", help="data directory of the two runs (A, B)")
    parser.add_argument("--run-a")
    parser.add_argument("--run-b")
    parser.add_argument("--best", help="the strategy whose failed queries the Results page shows")
    parser.add_argument("--query", help="the query the drill-down opens")
    parser.add_argument("--trends-db", help="data directory of the trends store")
    args = parser.parse_args()

    def module(name: str):
        return importlib.import_module(args.prefix + name)

    Store = module("engine.store").Store
    results, drilldown, compare = module("viewmodels.results"), module("viewmodels.drilldown"), \
        module("viewmodels.compare")
    runs, trends = module("viewmodels.runs"), module("viewmodels.trends")
    # A tree that keeps a complete run's reads (migrations 7 and 8) is also timed with nothing kept.
    keeps = any("kept_reads" in sql for _, sql in module("engine.store.migrations").MIGRATIONS)

    def page(store: Any) -> Any:
        """One open database for the page's reads, where the tree has it (app.py does it so)."""
        return store.session() if hasattr(store, "session") else nullcontext()

    out: dict = {"timings": {}, "module": results.__file__}

    def record(name: str, fn: Callable[[], object], before: Callable[[], object] | None = None) -> None:
        seconds, n, cpu = timed(fn, args.repeats, args.slow_s, before)
        out["timings"][name] = (seconds, n, cpu)
        print(f"  {args.side:<9} {name:<21} {seconds:8.3f} s ({n}x, CPU {cpu:.3f} s)   load {load()}", flush=True)

    if args.runs_db:
        path, run_a, run_b, best = args.runs_db, args.run_a, args.run_b, args.best
        failed_queries = (results.failed_queries if hasattr(results, "failed_queries")
                          else module("viewmodels.failures").failure_table)

        def results_page(store: Any) -> Any:
            with page(store):
                return results.results_view(store, run_a, "dcg", 10), failed_queries(store, run_a, best)

        def forget_kept():
            with Store(path).connect() as con:  # as before the run's reads were kept (migrations 7 and 8)
                con.execute("DELETE FROM paired_tests WHERE run_id = ?", [run_a])
                con.execute("DELETE FROM kept_reads WHERE run_id = ?", [run_a])

        metrics, cutoffs = iter(FIRST_VIEW_METRICS), iter(NEW_CUTOFFS)
        record("results", lambda: results_page(Store(path)))
        if keeps:
            record("results, nothing kept", lambda: results_page(Store(path)), before=forget_kept)
        record("results, other metric", lambda: results.results_view(Store(path), run_a, next(metrics), 10))
        record("results, k not stored", lambda: results.results_view(Store(path), run_a, "dcg", next(cutoffs)))
        record("drill-down", lambda: drilldown.query_detail(Store(path), run_a, args.query))
        record("compare", lambda: compare.compare_runs(Store(path), run_a, run_b, "dcg", 10))
        out["figures"] = {k: figures(results.results_view(Store(path), run_a, "dcg", k)) for k in (10, 7)}
        out["failed"] = plain(failed_queries(Store(path), run_a, best))

    if args.trends_db:
        def trends_page(store: Any) -> Any:
            with page(store):
                runs.run_choices(store, complete_only=True)
                trends.trend_cutoffs(store)
                return trends.trend(store, "dcg", 10)

        record("trends", lambda: trends_page(Store(args.trends_db)))
        out["trend"] = plain(trends_page(Store(args.trends_db))[["run_id", "strategy", "value", "ci_low", "ci_high"]])

    with open(args.out, "wb") as f:
        pickle.dump(out, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
