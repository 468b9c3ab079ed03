"""Postgres + pgvector and LanceDB against the built-ins on the SciFact demo: nDCG@10 and latency.

A real PostgreSQL 16 with pgvector (started by `pgserver` in a temporary folder, as the tests do,
unless ``--dsn`` names a server) and an embedded LanceDB get the demo with ``searchgrade
export-index --to postgres`` / ``--to lancedb``; then one ``searchgrade evaluate demo --qrels`` runs
our ``ann`` (exact), ``fulltext`` and ``hybrid`` beside each store's dense, full-text and hybrid
search, Postgres dense searched exactly (``exact = true``: no HNSW scan) to tell the index's
approximation from the rest, and Postgres full-text ranked by ``ts_rank_cd`` without normalization
beside the preset's default (``ts_rank``, normalization 1). Prints the machine, nDCG@10 and DCG@10 per strategy (with the run's
95% CIs), and each strategy's p50 / p95 latency.

    .venv/bin/python bench/bench_vector_stores.py [--max-queries 300] [--dsn DSN]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import load, machine  # noqa: E402
from searchgrade.cli import main as searchgrade  # noqa: E402
from searchgrade.engine.store import Store  # noqa: E402

OURS = ("ann", "fulltext", "hybrid")
PG = ("pg-dense", "pg-dense-exact", "pg-fulltext", "pg-fulltext-cd", "pg-hybrid")
LANCE = ("lance-dense", "lance-fulltext", "lance-hybrid")


def strategies_file(path: Path, dsn: str, lance: str) -> None:
    pg = f"kind = \"postgres\"\ndsn = {json.dumps(dsn)}\ntable = \"scifact\"\n"
    path.write_text(
        f"[strategy.pg-dense]\n{pg}search = \"dense\"\n\n"
        f"[strategy.pg-dense-exact]\n{pg}search = \"dense\"\nexact = true\n\n"
        f"[strategy.pg-fulltext]\n{pg}search = \"fulltext\"\n\n"
        f"[strategy.pg-fulltext-cd]\n{pg}search = \"fulltext\"\nrank = \"ts_rank_cd\"\nnormalization = 0\n\n"
        f"[strategy.pg-hybrid]\n{pg}search = \"hybrid\"\n\n"
        + "".join(f"[strategy.lance-{s}]\nkind = \"lancedb\"\nuri = {json.dumps(lance)}\ntable = \"scifact\"\n"
                  f"search = \"{s}\"\n\n" for s in ("dense", "fulltext", "hybrid")), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-queries", type=int, default=300)
    parser.add_argument("--dsn", help="a Postgres with pgvector to use (default: one started by pgserver)")
    args = parser.parse_args()
    print(machine("psycopg", "lancedb", "pgserver"), flush=True)
    with tempfile.TemporaryDirectory(prefix="searchgrade-bench-stores-") as tmp:
        root = Path(tmp)
        server = None
        dsn = args.dsn
        if dsn is None:
            from tests.indexes.declared.pg import Postgres

            server = Postgres()
            dsn = server.dsn
        try:
            data, lance = root / "data", str(root / "lance")
            for target in (["--to", "postgres", "--dsn", dsn, "--table", "scifact", "--replace"],
                           ["--to", "lancedb", "--uri", lance, "--table", "scifact"]):
                start = time.perf_counter()
                assert searchgrade(["export-index", "demo", *target, "--data-dir", str(data)]) == 0
                print(f"export-index {target[1]}: {time.perf_counter() - start:.1f} s (load {load()})", flush=True)
            path = root / "strategies.toml"
            strategies_file(path, dsn, lance)
            start = time.perf_counter()
            assert searchgrade(["evaluate", "demo", "--qrels", "--strategies-file", str(path), "--strategies",
                                ",".join(OURS + PG + LANCE), "--max-queries", str(args.max_queries),
                                "--data-dir", str(data)]) == 0
            print(f"evaluate: {time.perf_counter() - start:.1f} s (load {load()})")
            store = Store(data)
            (run,) = store.list_runs()
            summary = {(r["strategy"], r["metric"]): r for r in store.metric_summary(run.run_id, 10)}
            with store.connect() as con:
                latency = dict((s, (p50, p95)) for s, p50, p95 in con.execute(
                    "SELECT strategy, median(latency_ms), quantile_cont(latency_ms, 0.95) FROM "
                    "(SELECT DISTINCT strategy, query_id, latency_ms FROM results WHERE run_id = ?) "
                    "GROUP BY strategy", [run.run_id]).fetchall())
            print(f"\n{'strategy':16} {'nDCG@10 [95% CI]':>26} {'DCG@10':>8} {'p50 ms':>8} {'p95 ms':>8}  queries")
            for name in OURS + PG + LANCE:
                n, d = summary[(name, "ndcg")], summary[(name, "dcg")]
                print(f"{name:16} {n['value']:.4f} [{n['ci_low']:.4f}, {n['ci_high']:.4f}] {d['value']:8.4f} "
                      f"{latency[name][0]:8.1f} {latency[name][1]:8.1f}  {n['n']}")
            print(f"\ndense - ann (nDCG@10): pg {summary[('pg-dense', 'ndcg')]['value'] - summary[('ann', 'ndcg')]['value']:+.4f}, "
                  f"pg exact {summary[('pg-dense-exact', 'ndcg')]['value'] - summary[('ann', 'ndcg')]['value']:+.4f}, "
                  f"lance {summary[('lance-dense', 'ndcg')]['value'] - summary[('ann', 'ndcg')]['value']:+.4f}")
            print(machine("psycopg", "lancedb", "pgserver"))
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
