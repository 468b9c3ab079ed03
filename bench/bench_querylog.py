"""A 10-million-row query log in: time and peak memory of `queries import`, and its counts checked.

The log is synthetic and Zipf-distributed (s = 1.1 over a vocabulary of N = 2,000,000 queries): row
i searches query ``floor((1 + u (N**(1-s) - 1)) ** (1 / (1-s)))`` for a uniform u, the inverse of the
continuous approximation of Zipf's CDF (the top query gets about 9% of the searches), each
written ``Query 17`` or ``  query 17`` (one query after normalisation), with an ISO time and one of 300,000 users. It is written by numpy and pyarrow in
blocks of 500,000 rows (so the writer stays small too) in one child process; the import runs in a
second, fresh child process, which reports its own peak RSS (``ru_maxrss``): the figure is the whole
process (Python, DuckDB, the store), not an estimate. The import is then checked: the stored
searches add up to the rows written, and the top query's count equals a count of the file.

    .venv/bin/python bench/bench_querylog.py --rows 10000000          # the figure in RESULTS.md
    .venv/bin/python bench/bench_querylog.py --rows 200000 --min-count 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import machine  # noqa: E402

BLOCK = 500_000
VOCABULARY = 2_000_000
EXPONENT = 1.1
USERS = 300_000


def generate(path: Path, rows: int, seed: int = 0) -> None:
    """Write the synthetic log (query, timestamp, user_id) as CSV, block by block."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    start = np.datetime64("2024-01-01T00:00:00", "s")
    schema = pa.schema([("query", pa.string()), ("timestamp", pa.string()), ("user_id", pa.string())])
    with pacsv.CSVWriter(str(path), schema) as writer:
        for first in range(0, rows, BLOCK):
            n = min(BLOCK, rows - first)
            u = rng.uniform(size=n)
            rank = np.floor((1 + u * (VOCABULARY ** (1 - EXPONENT) - 1)) ** (1 / (1 - EXPONENT)))
            rank = np.clip(rank, 1, VOCABULARY).astype(np.int64)
            prefix = np.where(rng.uniform(size=n) < 0.5, "Query ", "  query ")
            text = np.char.add(prefix, rank.astype(str))
            seconds = rng.integers(0, 180 * 86400, n)
            times = np.datetime_as_string(start + seconds.astype("timedelta64[s]"), unit="s")
            users = np.char.add("u", rng.integers(0, USERS, n).astype(str))
            writer.write_table(pa.table({"query": text, "timestamp": np.char.add(times, "Z"), "user_id": users},
                                        schema=schema))


def run_import(path: Path, data_dir: Path, min_count: int) -> dict:
    """Import the log with the engine (what `searchgrade queries import` calls); peak RSS of this process."""
    import resource

    from searchgrade.engine.store import Store
    from searchgrade.engine.traffic.logs import LogOptions, import_log

    started = time.perf_counter()
    store = Store(data_dir)
    summary = import_log(store, path, LogOptions(name="bench", min_count=min_count))
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    top = store.log_rank_range("bench", 1, 1)[0]
    return {"seconds": seconds, "peak_rss_mb": peak_mb, "rows": summary.rows_read, "searches": summary.searches,
            "queries": summary.queries, "kept_queries": summary.kept_queries, "kept_searches": summary.kept_searches,
            "top_text": top["text"], "top_searches": int(top["searches"]), "floor": summary.floor_line()}


def count_in_file(path: Path, text: str) -> int:
    import duckdb

    return duckdb.connect().execute(
        "SELECT count(*) FROM read_csv(?, all_varchar = true, header = true) "
        "WHERE regexp_replace(lower(trim(query)), '\\s+', ' ', 'g') = ?", [str(path), text]).fetchone()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--min-count", type=int, default=1)
    parser.add_argument("--keep", metavar="DIR", help="write the log and the store here (default: a temporary folder)")
    parser.add_argument("--child", choices=("generate", "import"), help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "generate":
        generate(Path(args.path), args.rows)
        return 0
    if args.child == "import":
        print(json.dumps(run_import(Path(args.path), Path(args.data_dir), args.min_count)))
        return 0

    print(f"machine: {machine('duckdb', 'numpy', 'pyarrow')}")
    with tempfile.TemporaryDirectory(prefix="bench-querylog-") as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        log, data_dir = folder / f"log-{args.rows}.csv", folder / "store"
        me = [sys.executable, __file__, "--rows", str(args.rows), "--min-count", str(args.min_count)]
        if not log.exists():
            started = time.perf_counter()
            subprocess.run([*me, "--child", "generate", "--path", str(log)], check=True)
            print(f"generated {args.rows:,} rows ({log.stat().st_size / 1e6:,.0f} MB CSV) in "
                  f"{time.perf_counter() - started:.1f} s")
        out = subprocess.run([*me, "--child", "import", "--path", str(log), "--data-dir", str(data_dir)],
                             check=True, capture_output=True, text=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        print(f"import: {result['seconds']:.1f} s, peak RSS {result['peak_rss_mb']:,.0f} MB; "
              f"{result['rows']:,} rows -> {result['queries']:,} distinct queries; {result['floor']}")
        expected = count_in_file(log, result["top_text"])
        ok = result["searches"] == args.rows and result["top_searches"] == expected
        print(f"check: stored searches {result['searches']:,} (rows {args.rows:,}); top query {result['top_text']!r} "
              f"{result['top_searches']:,} searches (file: {expected:,}): {'OK' if ok else 'MISMATCH'}")
        print(f"store file: {(data_dir / 'searchgrade.duckdb').stat().st_size / 1e6:,.0f} MB")
    print(f"machine after: {machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
