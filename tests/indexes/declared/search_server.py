"""A real HTTP search server for the tests and the bench: our full-text BM25 behind an
Elasticsearch-shaped ``_search`` API, with failures to order.

    python -m tests.indexes.declared.search_server --collection DIR [--port 0]

prints ``PORT <n>`` when it listens. Endpoints:

- ``POST /<index>/_search`` with ``{"size": k, "query": {"match": {"text": "..."}}}``: the reply
  ``{"took": ms, "hits": {"hits": [{"_id", "_score", "_source": {"title", "text"}}]}}``.
- ``GET /search?q=...&n=k``: ``{"results": [{"doc": {"id", "name"}, "relevance"}]}`` (another shape).
- ``POST /_control`` with any of ``fail_every`` (answer 500 to every n-th search request),
  ``close_every`` (close the connection without a reply on every n-th), ``fail_queries`` (queries
  answered 500 every time), ``prefix`` (prepended to every id: a wrong id mapping),
  ``extra`` (ids of made-up documents, with title/text, put first in every list), ``latency_ms``.
  The counter restarts at every control call. ``GET /_stats`` gives the requests counted.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


class State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.control: dict = {}
        self.count = 0
        self.failed = 0

    def next(self) -> int:
        with self.lock:
            self.count += 1
            return self.count


def make_handler(searcher, docs, state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _send(self, status: int, payload: dict) -> None:
            body = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _search(self, query: str, k: int) -> list[tuple[str, float]] | None:
            n = state.next()
            c = state.control
            if c.get("latency_ms"):
                time.sleep(c["latency_ms"] / 1000)
            if c.get("close_every") and n % c["close_every"] == 0:
                state.failed += 1
                self.close_connection = True
                self.connection.shutdown(2)
                return None
            if (c.get("fail_every") and n % c["fail_every"] == 0) or query in c.get("fail_queries", ()):
                state.failed += 1
                self._send(500, {"error": "internal error (made up by the test server)"})
                return None
            hits = [(d.doc_id, d.score) for d in searcher.search_one(query, k)] if query.strip() else []
            extra = [(f"{e}", 100.0 - i) for i, e in enumerate(c.get("extra", []))]
            return [(c.get("prefix", "") + doc_id, score) for doc_id, score in (extra + hits)[:k]]

        def _source(self, doc_id: str) -> dict:
            bare = doc_id[len(state.control.get("prefix", "")):]
            doc = docs.get(bare)
            if doc is None:
                return {"title": f"Made-up {bare}", "text": f"A document the collection does not hold: {bare}."}
            return {"title": doc.title, "text": doc.text}

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/_stats":
                self._send(200, {"requests": state.count, "failed": state.failed})
                return
            if url.path != "/search":
                self._send(404, {"error": f"no such path {url.path}"})
                return
            params = urllib.parse.parse_qs(url.query)
            hits = self._search(params.get("q", [""])[0], int(params.get("n", ["10"])[0]))
            if hits is not None:
                self._send(200, {"results": [{"doc": {"id": d, "name": self._source(d)["title"]}, "relevance": s}
                                             for d, s in hits]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._send(400, {"error": "body is not JSON"})
                return
            path = urllib.parse.urlsplit(self.path).path
            if path == "/_control":
                with state.lock:
                    state.control = body
                    state.count = 0
                    state.failed = 0
                self._send(200, {"ok": True})
                return
            if not path.endswith("/_search"):
                self._send(404, {"error": f"no such index path {path}"})
                return
            if self.headers.get("X-Require") and self.headers.get("Authorization") != self.headers.get("X-Require"):
                self._send(401, {"error": "unauthorized"})
                return
            query = body.get("query", {}).get("match", {}).get("text", "")
            if isinstance(query, dict):
                query = query.get("query", "")
            start = time.perf_counter()
            hits = self._search(str(query), int(body.get("size", 10)))
            if hits is not None:
                self._send(200, {"took": int(1000 * (time.perf_counter() - start)),
                                 "hits": {"hits": [{"_id": d, "_score": s, "_source": self._source(d)}
                                                   for d, s in hits]}})

    return Handler


def main() -> None:
    from searchgrade.core.records import collection_fingerprint
    from searchgrade.engine.collections import load_collection
    from searchgrade.indexes.build import build_searchers
    from searchgrade.indexes.settings import IndexSettings

    parser = argparse.ArgumentParser()
    parser.add_argument("--collection", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    collection = load_collection(args.collection)
    built = build_searchers(collection, IndexSettings(), Path(args.data_dir), strategies=["fulltext"],
                            collection_fingerprint=collection_fingerprint(collection))
    searcher = built.context.fulltext()
    docs = {d.doc_id: d for d in collection.documents}
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(searcher, docs, State()))
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
