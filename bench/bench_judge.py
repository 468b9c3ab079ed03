"""Judge throughput against a local OpenAI-compatible server with a fixed artificial latency.

The tests' fake server (tests/engine/llm/fake_server.py: stdlib ThreadingHTTPServer on 127.0.0.1) answers every chat completion with a
valid judge reply after ``--latency-ms``. With that latency L and concurrency c, the ideal
throughput is c / L pairs per second; the ratio measured / ideal shows what the client, the
openai package, threads and the cache writes cost on top.

    .venv/bin/python bench/bench_judge.py [--pairs 200] [--latency-ms 200] [--concurrency 1 4 8] [--store]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from searchgrade.core.records import Document, Query
from searchgrade.engine.llm.cache import MemoryCache, StoreCache
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.judge import judge_pairs
from searchgrade.engine.llm.settings import LLMSettings
from tests.engine.llm.fake_server import FakeOpenAIServer, chat_body


def judge_responder(body: dict[str, Any], n: int) -> tuple[int, Any, dict[str, str]]:
    """A valid judge reply to every request (the latency is the server's)."""
    reply = chat_body(json.dumps({"grade": 2, "reason": "partly answers"}))
    reply["usage"] = {"prompt_tokens": 300, "completion_tokens": 12, "total_tokens": 312}
    return 200, reply, {}


def make_pairs(n: int, tag: str) -> list[tuple[Query, Document]]:
    # A fresh tag per run: nothing is served from the cache.
    docs = [Document(f"d{i}", f"Title {i}", f"Document {i} ({tag}). " + "Some text. " * 60)
            for i in range(n)]
    return [(Query(f"q{i}", f"query number {i} {tag}"), docs[i]) for i in range(n)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--store", action="store_true",
                        help="cache grades in a DuckDB store (as a run does) instead of memory")
    args = parser.parse_args(argv)
    latency_s = args.latency_ms / 1000.0
    print(f"judge throughput: {args.pairs} unique pairs, server latency {args.latency_ms:g} ms, "
          f"cache {'DuckDB store' if args.store else 'memory'}")
    print(f"{'conc.':>5} {'wall s':>8} {'pairs/s':>8} {'ideal':>7} {'ratio':>6} {'sent':>5} {'recv':>5}")
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(judge_responder, latency_s) as server:
        for concurrency in args.concurrency:
            if args.store:
                from searchgrade.engine.store import Store

                cache = StoreCache(Store(Path(tmp) / f"c{concurrency}"))
            else:
                cache = MemoryCache()
            client = LLMClient(
                LLMSettings(model="bench", base_url=server.base_url, concurrency=concurrency,
                            output_mode="json_object_schema"),
                api_key="bench",
            )
            pairs = make_pairs(args.pairs, f"c{concurrency}")
            before = server.posts
            t0 = time.perf_counter()
            result = judge_pairs(pairs, client, cache)
            wall = time.perf_counter() - t0
            if result.failures:
                raise SystemExit(f"{result.failures} judge failures against the fake server")
            sent = client.usage.snapshot()["judge"]["requests"]
            measured = args.pairs / wall
            ideal = concurrency / latency_s
            print(f"{concurrency:>5} {wall:>8.2f} {measured:>8.2f} {ideal:>7.2f} "
                  f"{measured / ideal:>6.3f} {sent:>5} {server.posts - before:>5}")


if __name__ == "__main__":
    main()
