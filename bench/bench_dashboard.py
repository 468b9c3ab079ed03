"""Server time of the dashboard's views, cold, side by side with the implementation before issue 12.

Builds runs in a real DuckDB file through the store (tests/pages/synthetic.py: rankings given, no
index; metrics and CIs from the pipeline's own functions) and times, for each size, the view
models a page calls, each call cold (a fresh Store, no page cache, the database not yet open in
the process), in the same process and run for both implementations:

- results: the Results page's view model at the stored k = 10, with its failed-queries table,
  over one open database as the app reads a page (runs are written as the pipeline writes them:
  their first Results page, paired tests and other reads, kept when they complete);
- results, nothing kept: the same page of a run that completed before its reads were kept
  (migrations 7 and 8): everything computed, then kept;
- results, other metric: the same view at another stored metric, opened for the first time (its
  paired tests computed, then kept): each repeat a metric not opened before;
- results, k not stored: a cut-off the run did not store (recomputed from the stored grades),
  opened for the first time: each repeat another k (7, 9, 8, 6, 4, 2), so its paired tests are
  computed, not read back kept;
- drill-down: one query of the run;
- compare: two runs of the same queries at DCG@10;
- trends: the Trends page's reads (complete runs, cut-offs, DCG@10 over every run) over --runs runs,
  over one open database as the app reads a page.

"baseline" is the code of main at 090b02f (bench/dashboard_baseline/), "new" is engine/report/.
Prints the machine and its load, the median of --repeats calls of each (fewer for a baseline
call that takes over --slow-s seconds: the count is printed), the ratio, the issue's target, and
checks that both give the same figures.

    .venv/bin/python bench/bench_dashboard.py [--queries 1000,10000] [--repeats 5] [--runs 500]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.machine import load, machine  # noqa: E402

#: The issue's targets in seconds, by (view, queries); trends by number of runs.
TARGETS = {
    ("results", 1000): 0.3, ("results, k not stored", 1000): 0.5,
    ("results", 10000): 1.0, ("results, k not stored", 10000): 2.0,
    ("drill-down", 10000): 0.2, ("compare", 10000): 1.5,
    ("trends", 500): 0.5,
}

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


def build_runs(path: str, n_queries: int) -> tuple[str, str]:
    """Two runs of the same queries (B's strategies find relevant documents at other rates)."""
    from searchgrade.engine.store import Store
    from tests.pages.synthetic import random_spec, write_run

    store = Store(path)
    a = write_run(store, random_spec(n_queries, seed=0, name=f"A {n_queries}"), n_bootstrap=1000)
    spec = random_spec(n_queries, seed=0, name=f"B {n_queries}")
    other = random_spec(n_queries, seed=1)
    # Same queries and qrels; half of B's rankings are another draw.
    spec.rankings = {s: {q: (other.rankings[s][q] if i % 2 else r) for i, (q, r) in enumerate(ranking.items())}
                     for s, ranking in spec.rankings.items()}
    b = write_run(store, spec, n_bootstrap=1000)
    return a, b


def build_trend_store(path: str, n_runs: int) -> None:
    """n_runs complete runs of 100 queries x 6 strategies: one written through the store, the
    others copies of it in SQL (with later dates), with every table a run fills."""
    from searchgrade.engine.store import Store
    from tests.pages.synthetic import random_spec, write_run

    store = Store(path)
    base = write_run(store, random_spec(100, n_docs=1000, name="trend run"), n_bootstrap=200)
    with store.connect() as con:
        con.execute("CREATE TEMP TABLE clones AS SELECT i, printf('clone-%05d', i) AS run_id "
                    "FROM range(1, ?) t(i)", [n_runs])
        tables = [t for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT temporary AND table_name IN "
            "(SELECT table_name FROM duckdb_columns() WHERE column_name = 'run_id')").fetchall()]
        for table in tables:
            columns = [c for (c,) in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
                [table]).fetchall()]
            select = ", ".join("clones.run_id" if c == "run_id" else
                               "x.created_at + to_minutes(clones.i)" if c == "created_at" else f"x.{c}"
                               for c in columns)
            con.execute(f"INSERT INTO {table} SELECT {select} FROM {table} x, clones WHERE x.run_id = ?", [base])


def same_ranking(new, old) -> bool:
    """The same best (or worst) queries: equal means in the same places (to 1e-9), and the same
    queries at each mean, except in the last group, which the list's length may cut. Queries whose
    means tie are ordered by id now; the baseline ordered them by the last bit of a float sum."""
    import numpy as np

    if len(new) != len(old) or not np.allclose(new["mean_value"].to_numpy(float),
                                               old["mean_value"].to_numpy(float), atol=1e-9):
        return False
    groups_new = new.groupby(new["mean_value"].round(9), sort=False)["query_id"].apply(set)
    groups_old = old.groupby(old["mean_value"].round(9), sort=False)["query_id"].apply(set)
    return groups_new.iloc[:-1].equals(groups_old.iloc[:-1])


def same_figures(new, old) -> list[str]:
    """Where the new results view differs from the baseline's (empty: the same figures)."""
    import numpy as np

    problems = []
    if (new.headline.strategy, round(new.headline.value, 9)) != (old.headline.strategy, round(old.headline.value, 9)):
        problems.append("headline")
    for name in ("metric_summary", "by_position"):
        a, b = getattr(new, name), getattr(old, name)
        numeric = [c for c in b.columns if c in a.columns and b[c].dtype.kind == "f"]
        if len(a) != len(b) or not np.allclose(a[numeric].to_numpy(float), b[numeric].to_numpy(float),
                                                atol=1e-9, equal_nan=True):
            problems.append(name)
    for name in ("best_queries", "worst_queries"):
        if not same_ranking(getattr(new, name), getattr(old, name)):
            problems.append(name)
    a, b = new.reranker_table, old.reranker_table
    if not np.allclose(a[["Change", "CI low", "CI high", "p-value"]].to_numpy(float),
                       b[["Change", "CI low", "CI high", "p-value"]].to_numpy(float), atol=1e-9):
        problems.append("reranker tests")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="1000,10000", help="run sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=500, help="runs in the trends store (0: skip)")
    parser.add_argument("--slow-s", type=float, default=20.0,
                        help="a call slower than this is not repeated (the baseline at 10,000 queries)")
    args = parser.parse_args()
    if not 1 <= args.repeats <= len(NEW_CUTOFFS):
        parser.error(f"--repeats must be 1 to {len(NEW_CUTOFFS)} (one metric and one k not opened before per repeat)")

    from bench.dashboard_baseline import BaselineStore
    from bench.dashboard_baseline import compare as old_compare
    from bench.dashboard_baseline import drilldown as old_drilldown
    from bench.dashboard_baseline import results as old_results
    from bench.dashboard_baseline import runs as old_runs
    from bench.dashboard_baseline import trends as old_trends
    from searchgrade.engine.report import compare, drilldown, results, runs, trends
    from searchgrade.engine.store import Store

    print(f"machine: {machine('numpy', 'duckdb')}")
    print(f"at start: load average {load()}")
    rows: list[tuple[str, int, float, int, float, int, float, float]] = []
    mismatches: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in args.queries.split(",")]:
            path = os.path.join(tmp, f"q{n}")
            t0 = time.perf_counter()
            run_a, run_b = build_runs(path, n)
            print(f"{n:,} queries x 6 strategies x k = 10: two runs built in {time.perf_counter() - t0:.0f} s")
            best = results.results_view(Store(path), run_a).headline.strategy
            query = Store(path).queries(run_a)[n // 2]["query_id"]

            def pair(new: Callable[[Store], object], old: Callable[[Store], object]):
                # A fresh Store per call: nothing cached, the database not open yet in this process.
                return (lambda: new(Store(path)), lambda: old(BaselineStore(path)))

            def results_page(s: Store):
                with s.session():  # the app reads a page over one open database (app.py)
                    return results.results_view(s, run_a, "dcg", 10), results.failed_queries(s, run_a, best)

            def forget_kept():
                with Store(path).connect() as con:  # as before migrations 7 and 8
                    con.execute("DELETE FROM paired_tests WHERE run_id = ?", [run_a])
                    con.execute("DELETE FROM kept_reads WHERE run_id = ?", [run_a])

            new_metrics, old_metrics = iter(FIRST_VIEW_METRICS), iter(FIRST_VIEW_METRICS)
            new_cutoffs, old_cutoffs = iter(NEW_CUTOFFS), iter(NEW_CUTOFFS)
            views = {
                "results": pair(results_page, lambda s: (old_results.results_view(s, run_a, "dcg", 10),
                                                         old_results.failed_queries(s, run_a, best))),
                # The baseline kept nothing: its call is the one of "results", not timed twice.
                "results, nothing kept": (lambda: results_page(Store(path)), None),
                "results, other metric": (
                    lambda: results.results_view(Store(path), run_a, next(new_metrics), 10),
                    lambda: old_results.results_view(BaselineStore(path), run_a, next(old_metrics), 10)),
                "results, k not stored": pair(lambda s: results.results_view(s, run_a, "dcg", next(new_cutoffs)),
                                              lambda s: old_results.results_view(s, run_a, "dcg", next(old_cutoffs))),
                "drill-down": pair(lambda s: drilldown.query_detail(s, run_a, query),
                                   lambda s: old_drilldown.query_detail(s, run_a, query)),
                "compare": pair(lambda s: compare.compare_runs(s, run_a, run_b, "dcg", 10),
                                lambda s: old_compare.compare_runs(s, run_a, run_b, "dcg", 10)),
            }
            for name, (new, old) in views.items():
                before = forget_kept if name == "results, nothing kept" else None
                new_s, new_n, new_cpu = timed(new, args.repeats, args.slow_s, before)
                if old is None:
                    old_s, old_n, old_cpu = rows[-1][2], rows[-1][3], rows[-1][6]
                else:
                    old_s, old_n, old_cpu = timed(old, args.repeats, args.slow_s)
                rows.append((name, n, old_s, old_n, new_s, new_n, old_cpu, new_cpu))
                print(f"  {name:<21} baseline {old_s:8.3f} s ({old_n}x, CPU {old_cpu:.3f} s)   "
                      f"new {new_s:7.3f} s ({new_n}x, CPU {new_cpu:.3f} s)   load {load()}", flush=True)
            for k in (10, 7):
                problems = same_figures(results.results_view(Store(path), run_a, "dcg", k),
                                        old_results.results_view(BaselineStore(path), run_a, "dcg", k))
                mismatches += [f"{n} queries, k = {k}: {p}" for p in problems]
            new_failed = results.failed_queries(Store(path), run_a, best)
            old_failed = old_results.failed_queries(BaselineStore(path), run_a, best)
            if not (new_failed.columns.tolist() == old_failed.columns.tolist()
                    and new_failed.astype(str).values.tolist() == old_failed.astype(str).values.tolist()):
                mismatches.append(f"{n} queries: failed queries table")
        if args.runs:
            path = os.path.join(tmp, "trends")
            t0 = time.perf_counter()
            build_trend_store(path, args.runs)
            print(f"{args.runs} complete runs of 100 queries x 6 strategies built in {time.perf_counter() - t0:.0f} s")

            def trends_page(report_runs, report_trends, store):
                report_runs.run_choices(store, complete_only=True)
                report_trends.trend_cutoffs(store)
                return report_trends.trend(store, "dcg", 10)

            def new_trends_page(store):
                with store.session():  # the app reads a page over one open database (app.py)
                    return trends_page(runs, trends, store)

            new_s, new_n, new_cpu = timed(lambda: new_trends_page(Store(path)), args.repeats, args.slow_s)
            old_s, old_n, old_cpu = timed(lambda: trends_page(old_runs, old_trends, BaselineStore(path)),
                                 args.repeats, args.slow_s)
            rows.append(("trends", args.runs, old_s, old_n, new_s, new_n, old_cpu, new_cpu))
            new_points = trends_page(runs, trends, Store(path))
            old_points = trends_page(old_runs, old_trends, BaselineStore(path))
            if new_points[["run_id", "strategy", "value", "ci_low", "ci_high"]].sort_values(
                    ["run_id", "strategy"]).values.tolist() != old_points[
                    ["run_id", "strategy", "value", "ci_low", "ci_high"]].sort_values(
                    ["run_id", "strategy"]).values.tolist():
                mismatches.append("trends: points differ")
    print(f"at end: load average {load()}")
    print()
    print(f"{'view':<21} {'size':>7} {'baseline (s)':>13} {'new (s)':>9} {'ratio':>7} {'target (s)':>11}  met"
          f"   {'CPU base (s)':>12} {'CPU new (s)':>11} {'CPU ratio':>9}")
    for name, size, old_s, old_n, new_s, new_n, old_cpu, new_cpu in rows:
        target = TARGETS.get((name, size))
        met = "" if target is None else ("yes" if new_s <= target else "NO")
        print(f"{name:<21} {size:>7,} {old_s:>10.3f}{'*' if old_n < args.repeats else ' ':<3}"
              f"{new_s:>9.3f} {old_s / new_s:>6.1f}x {'' if target is None else f'{target:.1f}':>11}  {met:<3}"
              f"   {old_cpu:>12.3f} {new_cpu:>11.3f} {old_cpu / new_cpu:>8.1f}x")
    print(f"medians of {args.repeats} cold calls; * fewer: a baseline call over {args.slow_s:.0f} s is not repeated. "
          "size: queries per run (trends: runs). Targets are wall time; CPU: this process's CPU time.")
    print("same figures as the baseline: " + ("yes" if not mismatches else "NO: " + "; ".join(mismatches)))
    return 0 if not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
