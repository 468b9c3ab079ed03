"""Rerank servers of the TEI and Cohere shapes for the tests: a real HTTP server in a thread.

Scores are a known function of the text (``known_score``), so a test knows the order a reranker
must give. ``POST /rerank`` is TEI's shape (``{"query", "texts"}`` -> ``[{"index", "score"}]``, best
first, 413 above ``max_batch`` texts); ``POST /v2/rerank`` Cohere's (``{"model", "query",
"documents", "top_n"}`` -> ``{"results": [{"index", "relevance_score"}]}``, 400 without a model).
``faults`` maps a query text to what its requests get: "500", "garbage" (a 200 that is no JSON),
"short" (one item left out), "range" (an index out of range), "429" (429 with Retry-After: 0 on the
first request only).
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def known_score(query: str, text: str) -> float:
    """Words of the text that are query words, then shorter texts first."""
    words = set(re.findall(r"\w+", query.lower()))
    return sum(1 for w in re.findall(r"\w+", text.lower()) if w in words) + 1.0 / (1 + len(text))


def expected_order(query: str, candidates: list[tuple[str, str]]) -> list[str]:
    """The doc ids of (doc id, text) candidates, in base order, sorted by known_score (stable)."""
    return [d for d, _ in sorted(candidates, key=lambda c: -known_score(query, c[1]))]


class RerankServer:
    def __init__(self, max_batch: int = 32) -> None:
        self.max_batch = max_batch
        self.faults: dict[str, str] = {}
        self.requests: list[dict] = []
        self._seen_429: set[str] = set()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        state = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, payload, raw: bytes | None = None, headers: dict | None = None) -> None:
                body = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                tei = self.path == "/rerank"
                texts = body.get("texts") if tei else body.get("documents")
                query = body.get("query", "")
                with state.lock:
                    state.requests.append({"path": self.path, "query": query, "n": len(texts or []),
                                           "model": body.get("model"),
                                           "authorization": self.headers.get("Authorization")})
                if self.path not in ("/rerank", "/v2/rerank") or not isinstance(texts, list):
                    return self._send(404 if self.path not in ("/rerank", "/v2/rerank") else 422, {"error": "bad"})
                if not tei and not body.get("model"):
                    return self._send(400, {"message": "model is required"})
                if tei and len(texts) > state.max_batch:
                    return self._send(413, {"error": f"batch size {len(texts)} > maximum allowed batch "
                                                     f"size {state.max_batch}", "error_type": "Validation"})
                fault = state.faults.get(query)
                if fault == "429" and query not in state._seen_429:
                    state._seen_429.add(query)
                    return self._send(429, {"message": "slow down"}, headers={"Retry-After": "0"})
                if fault == "500":
                    return self._send(500, {"message": "internal error (made up by the test server)"})
                if fault == "garbage":
                    return self._send(200, None, raw=b"<html>upstream hiccup</html>")
                scored = sorted(((i, known_score(query, t)) for i, t in enumerate(texts)), key=lambda x: -x[1])
                if fault == "short":
                    scored = scored[:-1]
                if fault == "range":
                    scored = [(len(texts) if n == 0 else i, s) for n, (i, s) in enumerate(scored)]
                if tei:
                    return self._send(200, [{"index": i, "score": s} for i, s in scored])
                top_n = int(body.get("top_n") or len(texts))
                return self._send(200, {"id": "x", "results": [{"index": i, "relevance_score": s}
                                                               for i, s in scored[:top_n]],
                                        "meta": {"billed_units": {"search_units": 1}}})

        return Handler
