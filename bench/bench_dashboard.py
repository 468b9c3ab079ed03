"""Server time of the results page's data for a run of 1,000 queries x 6 strategies x k = 10.

Builds the run in a real DuckDB file through the store (tests/pages/synthetic.py), then times the
functions the results page calls: cold (the view model straight from the store) and cached (the
page's st.cache_data wrappers after a first call). Prints the median of several repeats.

    .venv/bin/python bench/bench_dashboard.py [--queries 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()


    from engine.report.results import failed_queries, results_view
    from engine.store import Store
    from tests.pages.synthetic import random_spec, write_run

    with tempfile.TemporaryDirectory() as tmp:
        import os

        os.environ["SEARCHGRADE_HOME"] = tmp
        from views import _common as pages

        # Outside `streamlit run` the caches warn once per call that there is no runtime.
        for name in list(logging.root.manager.loggerDict):
            if name.startswith("streamlit"):
                logging.getLogger(name).setLevel(logging.ERROR)

        store = pages.store_for(pages.home())
        t0 = time.perf_counter()
        run_id = write_run(store, random_spec(args.queries), n_bootstrap=1000)
        build_s = time.perf_counter() - t0
        n_results = store._dicts("SELECT count(*) AS n FROM results WHERE run_id = ?", [run_id])[0]["n"]
        n_values = store._dicts("SELECT count(*) AS n FROM metric_values WHERE run_id = ?", [run_id])[0]["n"]
        print(f"run: {args.queries} queries x 6 strategies x k=10: {n_results:,} results, "
              f"{n_values:,} metric values (built in {build_s:.1f} s)")
        fresh = Store(tmp)
        best = results_view(fresh, run_id).headline.strategy

        def cold() -> None:
            results_view(fresh, run_id, "dcg", 10)
            failed_queries(fresh, run_id, best)

        def cold_recompute() -> None:
            results_view(fresh, run_id, "dcg", 7)

        def cached() -> None:
            pages.results_view(pages.home(), run_id, "dcg", 10)
            pages.failed_queries(pages.home(), run_id, best)
            pages.run_choices()
            store.get_run(run_id)

        cached()
        rows = [
            ("cold: results view + failed queries (stored k=10)", _time(cold, args.repeats)),
            ("cold: results view recomputed at k=7 (not stored)", _time(cold_recompute, max(1, args.repeats // 2))),
            ("cached: the same, through the page's st.cache_data", _time(cached, args.repeats)),
        ]

        # The whole results page script (widgets, figures, serialisation) under AppTest, cached.
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120)
        at.run()
        at.switch_page("views/results.py")
        at.run()
        if at.exception:
            raise SystemExit(f"results page failed: {at.exception[0].message}")
        rows.append(("cached: the whole results page script (AppTest rerun)", _time(at.run, args.repeats)))
        for label, seconds in rows:
            print(f"{label:<55} median {seconds * 1000:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
