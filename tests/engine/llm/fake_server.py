"""A local OpenAI-compatible HTTP server for tests: scripted replies, every request counted."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: respond(request_body, n) -> (status, body, headers); body is a dict (JSON) or a str (raw).
Responder = Callable[[dict[str, Any], int], tuple[int, Any, dict[str, str]]]


def chat_body(content: str, prompt_tokens: int = 20, completion_tokens: int = 8) -> dict[str, Any]:
    return {
        "id": "fake", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


class FakeOpenAIServer:
    """Serves /v1/chat/completions on 127.0.0.1 (a free port) in a thread."""

    def __init__(self, respond: Responder, latency_s: float = 0.0) -> None:
        self.respond = respond
        self.latency_s = latency_s
        self.posts = 0
        self.bodies: list[dict[str, Any]] = []
        #: Every request's (method, path, headers), GETs included.
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        #: What GET /v1/models lists.
        self.models: list[dict[str, Any]] = [{"id": "fake", "object": "model"}]
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body leave in two writes: without this, Nagle adds ~40 ms each.
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:
                pass

            def _record(self) -> None:
                with server._lock:
                    server.requests.append((self.command, self.path, dict(self.headers.items())))

            def do_GET(self) -> None:
                self._record()
                self._send(200, {"object": "list", "data": server.models}, {})

            def do_POST(self) -> None:
                self._record()
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    n = server.posts
                    server.posts += 1
                    server.bodies.append(body)
                if server.latency_s:
                    time.sleep(server.latency_s)
                self._send(*server.respond(body, n))

            def _send(self, status: int, body: Any, headers: dict[str, str]) -> None:
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
