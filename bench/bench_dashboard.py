"""Server time of the dashboard's views, cold, side by side with the implementation before issue 12.

Builds runs in a real DuckDB file through the store (tests/pages/synthetic.py: rankings given, no
index; metrics and CIs from the pipeline's own functions) and times, for each size, the view
models a page calls, each call cold (a fresh Store, no page cache, the database not yet open in
the process), over the same runs for both implementations, each in a process of its own
(bench/dashboard_views.py) with only its tree's code importable:

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

"baseline" is the whole tree of --baseline (default 090b02f, main before issue 12's view models),
checked out of git into a temporary folder (bench/baseline.py) and run from there: its view models,
its dashboard SQL and its store, reading the database this tree wrote (it knows migrations 1-2 and
reads only their tables). "new" is this tree's viewmodels/. Prints the machine and its load, the
median of --repeats calls of each (fewer for a baseline call that takes over --slow-s seconds: the
count is printed), the ratio, the issue's target, and checks that both give the same figures.

    .venv/bin/python bench/bench_dashboard.py [--queries 1000,10000] [--repeats 5] [--runs 500] [--baseline 090b02f]
    .venv/bin/python bench/bench_dashboard.py --queries 50 --repeats 1 --runs 3     # a quick check
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from bench.baseline import Tree, checkout, commit_of_this_tree, this_tree  # noqa: E402
from bench.dashboard_views import NEW_CUTOFFS  # noqa: E402
from bench.machine import load, machine  # noqa: E402

#: The commit before issue 12's view models (f08c58c): the "before" of the README's dashboard table.
BASELINE = "090b02f"
#: What the baseline needs of its tree: the evaluator and what it imports (not its demo or tests).
BASELINE_PATHS = ("core", "engine", "indexes")

#: The issue's targets in seconds, by (view, queries); trends by number of runs.
TARGETS = {
    ("results", 1000): 0.3, ("results, k not stored", 1000): 0.5,
    ("results", 10000): 1.0, ("results, k not stored", 10000): 2.0,
    ("drill-down", 10000): 0.2, ("compare", 10000): 1.5,
    ("trends", 500): 0.5,
}

def side(tree: Tree, out: Path, args: argparse.Namespace, *options: str) -> dict:
    """Run bench/dashboard_views.py over ``tree``'s code in a process of its own; its timings and figures."""
    argv = [*tree.script(BENCH / "dashboard_views.py"), "--prefix", tree.prefix, "--side", tree.label,
            "--out", str(out), "--repeats", str(args.repeats), "--slow-s", str(args.slow_s), *options]
    done = subprocess.run(argv, cwd=out.parent, env=tree.env(), check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench: the {tree.label} side failed (exit {done.returncode}); its output is above")
    with open(out, "rb") as f:
        return pickle.load(f)


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
            con.execute(f"INSERT INTO {table} SELECT {select} FROM {table} x, clones WHERE x.run_id = ?", [base])  # noqa: S608 - the test's own table names


def same_ranking(new: Any, old: Any) -> bool:
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


def same_failed(new: Any, old: Any, best: str) -> bool:
    """The same failed queries with the same top-1 cells. Since issue 34 a top 1 graded below the
    threshold fails too (it failed only at grade 0 before) and the table adds each failure's kind,
    cause and evidence: the new table's rows under the old rule (its ``best`` cell graded 0 or
    unjudged), in the old table's columns, must be the old table."""
    if "Cause" in old.columns or "Cause" not in new.columns:  # the same implementation on both sides
        return new.columns.tolist() == old.columns.tolist() and (
            new.astype(str).values.tolist() == old.astype(str).values.tolist())
    if not set(old.columns) <= set(new.columns):
        return False
    kept = new[new[best].str.startswith(("[0]", "[unjudged]"))][old.columns.tolist()]
    return kept.astype(str).values.tolist() == old.astype(str).values.tolist()


def same_figures(new: dict, old: dict) -> list[str]:
    """Where the new results view differs from the baseline's (empty: the same figures); each is
    the figures dashboard_views.py returns."""
    import numpy as np

    problems = []
    (new_best, new_value), (old_best, old_value) = new["headline"], old["headline"]
    if (new_best, round(new_value, 9)) != (old_best, round(old_value, 9)):
        problems.append("headline")
    for name in ("metric_summary", "by_position"):
        a, b = new[name], old[name]
        numeric = [c for c in b.columns if c in a.columns and b[c].dtype.kind == "f"]
        if len(a) != len(b) or not np.allclose(a[numeric].to_numpy(float), b[numeric].to_numpy(float),
                                                atol=1e-9, equal_nan=True):
            problems.append(name)
    for name in ("best_queries", "worst_queries"):
        if not same_ranking(new[name], old[name]):
            problems.append(name)
    a, b = new["reranker_table"], old["reranker_table"]
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
    parser.add_argument("--baseline", default=BASELINE, metavar="COMMIT",
                        help=f"the tree to compare with (default {BASELINE}: main before issue 12's view models)")
    args = parser.parse_args()
    if not 1 <= args.repeats <= len(NEW_CUTOFFS):
        parser.error(f"--repeats must be 1 to {len(NEW_CUTOFFS)} (one metric and one k not opened before per repeat)")

    from searchgrade.engine.run.strategies import label
    from searchgrade.engine.store import Store
    from searchgrade.viewmodels import results

    print(f"machine: {machine('numpy', 'duckdb')}")
    print(f"at start: load average {load()}")
    print(f"this tree: {commit_of_this_tree()}; baseline: {args.baseline}")
    rows: list[tuple[str, int, float, int, float, int, float, float]] = []
    mismatches: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, checkout(args.baseline, BASELINE_PATHS) as old_tree, \
            this_tree() as new_tree:
        work = Path(tmp)

        def both(size: int, data_dirs: dict[str, str], *options: str) -> tuple[dict, dict]:
            """Each side over its own copy of the same databases (a side's first views may keep what
            they computed), the baseline first."""
            sides = {}
            for name, tree in (("old", old_tree), ("new", new_tree)):
                copies = []
                for option, source in data_dirs.items():
                    copy = work / f"{name}-{Path(source).name}"
                    shutil.copytree(source, copy)
                    copies += [option, str(copy)]
                sides[name] = side(tree, work / f"{name}.pickle", args, *copies, *options)
                for copy in copies[1::2]:
                    shutil.rmtree(copy)
            old, new = sides["old"], sides["new"]
            print(f"  timed: {old['module']} and {new['module']}")
            for name, (new_s, new_n, new_cpu) in new["timings"].items():
                # A tree that kept nothing: its "nothing kept" is its "results", not timed twice.
                old_s, old_n, old_cpu = old["timings"].get(name, old["timings"].get("results"))
                rows.append((name, size, old_s, old_n, new_s, new_n, old_cpu, new_cpu))
            return old, new

        for n in [int(x) for x in args.queries.split(",")]:
            path = os.path.join(tmp, f"q{n}")
            t0 = time.perf_counter()
            run_a, run_b = build_runs(path, n)
            print(f"{n:,} queries x 6 strategies x k = 10: two runs built in {time.perf_counter() - t0:.0f} s")
            best = results.results_view(Store(path), run_a).headline.strategy
            query = Store(path).queries(run_a)[n // 2]["query_id"]
            old, new = both(n, {"--runs-db": path}, "--run-a", run_a, "--run-b", run_b, "--best", best,
                            "--query", query)
            for k in (10, 7):
                mismatches += [f"{n} queries, k = {k}: {p}" for p in same_figures(new["figures"][k], old["figures"][k])]
            if not same_failed(new["failed"], old["failed"], label(best)):
                mismatches.append(f"{n} queries: failed queries table")
        if args.runs:
            path = os.path.join(tmp, "trends")
            t0 = time.perf_counter()
            build_trend_store(path, args.runs)
            print(f"{args.runs} complete runs of 100 queries x 6 strategies built in {time.perf_counter() - t0:.0f} s")
            old, new = both(args.runs, {"--trends-db": path})
            order = ["run_id", "strategy"]
            if (new["trend"].sort_values(order).values.tolist()
                    != old["trend"].sort_values(order).values.tolist()):
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
          "size: queries per run (trends: runs). Targets are wall time; CPU: the timing process's CPU time.")
    print("same figures as the baseline: " + ("yes" if not mismatches else "NO: " + "; ".join(mismatches)))
    return 0 if not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
