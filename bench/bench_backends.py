"""searchgrade's own overhead per query on an HTTP strategy, side by side with direct calls.

A real local search server process (tests/indexes/declared/search_server.py: our BM25 over the
SciFact demo behind an Elasticsearch-shaped ``_search`` API) answers the same queries two ways,
alternating, ``--repeats`` times, one request at a time:

- direct: a plain ``requests.Session().post`` of the same body and ``json.loads`` of the reply
  (what any client has to do: the backend's own time as a client sees it);
- searchgrade: the ``kind = "elasticsearch"`` strategy through the executor (templates filled,
  the reply read with JMESPath, ids/scores/titles mapped, latency and failures recorded).

The overhead is (searchgrade - direct) / direct of the median seconds per query; the issue's
bound is <= 5%. The lists are checked to be the same ids in the same order.

On a loaded machine the two medians differ by more than the overhead itself (noise of the
backend's time), so the bench also measures searchgrade's own work alone: the same strategy
through the executor with the network replaced by the recorded replies (templates filled, replies
read, ids mapped, results and latencies recorded), as a share of the direct median.

    .venv/bin/python bench/bench_backends.py [--queries 100] [--repeats 5] [--k 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import machine  # noqa: E402
from searchgrade.engine.collections import load_collection  # noqa: E402
from searchgrade.indexes.base import QueryBatch  # noqa: E402
from searchgrade.indexes.declared.http import HttpNode  # noqa: E402
from searchgrade.indexes.declared.spec import parse_spec  # noqa: E402
from searchgrade.indexes.executor import Executor  # noqa: E402
from tests.indexes.declared.conftest import SearchServer  # noqa: E402

DEMO = ROOT / "demo" / "scifact"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()

    import requests

    texts = [q.text for q in load_collection(DEMO).queries[: args.queries]]
    ids = [f"q{i}" for i in range(len(texts))]
    with tempfile.TemporaryDirectory() as tmp:
        server = SearchServer(DEMO, Path(tmp))
        try:
            url = f"{server.url}/scifact/_search"
            spec = parse_spec("es", {"kind": "elasticsearch", "host": server.url, "index": "scifact",
                                     "query": '{"match": {"text": {{query}}}}', "concurrency": 1}, "bench")
            node = HttpNode(spec)
            executor = Executor({"es": node}, ["es"], args.k)
            session = requests.Session()
            session.headers.update({"Accept": "application/json", "Content-Type": "application/json"})

            def direct() -> list[list[str]]:
                out = []
                for text in texts:
                    body = json.dumps({"size": args.k, "query": {"match": {"text": text}}}).encode()
                    reply = json.loads(session.post(url, data=body, timeout=10).content)
                    out.append([h["_id"] for h in reply["hits"]["hits"]])
                return out

            def searchgrade() -> list[list[str]]:
                hits = executor.run(QueryBatch(ids, texts)).hits["es"]
                return [[d.doc_id for d in h.docs] for h in hits]

            print(f"machine: {machine()}")
            print(f"SciFact demo, {len(texts)} queries, k = {args.k}, one request at a time, "
                  f"{args.repeats} repeats alternating")
            direct(), searchgrade()  # warm-up: connections, the server's caches
            times: dict[str, list[float]] = {"direct (requests + json)": [], "searchgrade (executor)": []}
            lists = {}
            for _ in range(args.repeats):
                for label, fn in zip(times, (direct, searchgrade), strict=True):
                    start = time.perf_counter()
                    lists[label] = fn()
                    times[label].append((time.perf_counter() - start) / len(texts))
            replies = {}
            for text in texts:
                body = json.dumps({"size": args.k, "query": {"match": {"text": text}}}).encode()
                replies[text] = json.loads(session.post(url, data=body, timeout=10).content)

            class Replay(HttpNode):
                def request(self, query: str, k: int) -> object:  # noqa: ARG002 - the recorded reply, no network
                    return replies[query]

            replay = Executor({"es": Replay(spec)}, ["es"], args.k)
            own = []
            for _ in range(max(5, args.repeats)):
                start = time.perf_counter()
                replayed = replay.run(QueryBatch(ids, texts)).hits["es"]
                own.append((time.perf_counter() - start) / len(texts))
            assert [[d.doc_id for d in h.docs] for h in replayed] == lists["direct (requests + json)"]
        finally:
            server.stop()
    for label, values in times.items():
        print(f"  {label:26s} median {1000 * statistics.median(values):7.3f} ms/query  (runs: "
              f"{', '.join(f'{1000 * v:.3f}' for v in values)})")
    a, b = (statistics.median(v) for v in times.values())
    same = lists["direct (requests + json)"] == lists["searchgrade (executor)"]
    print(f"  overhead: {100 * (b - a) / a:+.1f}% ({1000 * (b - a):+.3f} ms/query); same ids in the same "
          f"order: {same}")
    print(f"  searchgrade's own work alone (recorded replies, no network): median "
          f"{1000 * statistics.median(own):.3f} ms/query = {100 * statistics.median(own) / a:.2f}% of the "
          "direct median")
    print(f"machine after: {machine()}")


if __name__ == "__main__":
    main()
